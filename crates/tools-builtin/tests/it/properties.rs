//! Property tests: the edit engine and the truncation helpers.

use agent_tool::{TruncationOptions, count_lines, truncate_head, truncate_tail};
use proptest::prelude::*;
use tools_builtin::edit_core::{Edit, apply_edits, diff_outputs, normalize_line_endings};

/// Applies a unified patch (as produced by `diff_outputs`) to `old`.
fn apply_patch(old: &str, patch: &str) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut cursor = 0usize;
    let mut last_added: Option<usize> = None;
    for line in patch.lines() {
        if let Some(h) = line.strip_prefix("@@ -") {
            let start: usize = h.split([',', ' ']).next().unwrap().parse().unwrap();
            let start = start.saturating_sub(1);
            // An empty old range ("-0,0") starts at 0.
            let start = if h.starts_with("0,0") { 0 } else { start };
            while cursor < start {
                out.push_str(old_lines[cursor]);
                cursor += 1;
            }
            continue;
        }
        if line.starts_with("---") || line.starts_with("+++") {
            continue;
        }
        if line.starts_with('\\') {
            // "\ No newline at end of file": the previous line had no newline.
            if let Some(at) = last_added
                && out.ends_with('\n')
                && out.len() == at
            {
                out.pop();
            }
            continue;
        }
        match line.as_bytes().first() {
            Some(b' ') => {
                out.push_str(old_lines[cursor]);
                cursor += 1;
                last_added = None;
            }
            Some(b'-') => {
                cursor += 1;
                last_added = None;
            }
            Some(b'+') => {
                out.push_str(&line[1..]);
                out.push('\n');
                last_added = Some(out.len());
            }
            _ => {}
        }
    }
    while cursor < old_lines.len() {
        out.push_str(old_lines[cursor]);
        cursor += 1;
    }
    out
}

fn line_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("a"),
            Just("b"),
            Just("é"),
            Just(" "),
            Just("\u{201C}"),
            Just("x"),
            Just("\t"),
            Just("z")
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn edit_changes_only_its_span_and_the_patch_reproduces_it(
        lines in prop::collection::vec(line_strategy(), 1..30),
        crlf in any::<bool>(),
        pick in any::<prop::sample::Index>(),
        new_text in "[a-c\n]{0,12}",
        trailing_newline in any::<bool>(),
    ) {
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut content = lines.join(eol);
        if trailing_newline { content.push_str(eol); }
        let line = &lines[pick.index(lines.len())];
        prop_assume!(!line.trim().is_empty());
        let edits = [Edit { old_text: line.clone(), new_text: new_text.clone() }];
        if let Ok(applied) = apply_edits(&content, &edits, "f") {
            // Exact match: the result is the original with that one span replaced.
            let start = content.find(line.as_str()).unwrap();
            let replacement = new_text.replace('\n', tools_builtin::edit_core::detect_line_ending(&content));
            let expected = format!("{}{}{}", &content[..start], replacement, &content[start + line.len()..]);
            prop_assert_eq!(&applied.content, &expected);
            let old_lf = normalize_line_endings(&content);
            let new_lf = normalize_line_endings(&applied.content);
            let (_, patch, _) = diff_outputs(&old_lf, &new_lf, "f");
            prop_assert_eq!(apply_patch(&old_lf, &patch), new_lf);
        }
    }

    #[test]
    fn truncation_respects_limits_and_characters(
        text in "(\\PC|\n){0,400}",
        max_lines in 1usize..20,
        max_bytes in 1usize..200,
    ) {
        let opts = TruncationOptions { max_lines, max_bytes };
        let head = truncate_head(&text, opts);
        prop_assert!(head.output_bytes == head.content.len());
        if head.truncated {
            prop_assert!(head.content.len() <= max_bytes);
            prop_assert!(count_lines(&head.content) <= max_lines);
            prop_assert!(text.starts_with(&head.content));
        } else {
            prop_assert_eq!(&head.content, &text);
        }
        let tail = truncate_tail(&text, opts);
        if tail.truncated {
            prop_assert!(tail.content.len() <= max_bytes);
            prop_assert!(count_lines(&tail.content) <= max_lines);
            let body = text.strip_suffix('\n').unwrap_or(&text);
            prop_assert!(body.ends_with(&tail.content));
        } else {
            prop_assert_eq!(&tail.content, &text);
        }
    }
}
