//! The edit engine's cases: exact and fuzzy matches, line endings kept,
//! the errors' texts and the diffs.

use super::*;

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old_text: old.into(),
        new_text: new.into(),
    }
}

fn apply(content: &str, edits: &[Edit]) -> Result<String, String> {
    apply_edits(content, edits, "f.txt")
        .map(|a| a.content)
        .map_err(|e| e.to_string())
}

#[test]
fn errors_are_typed_and_keep_pis_wording() {
    let err = |content: &str, edits: &[Edit]| apply_edits(content, edits, "f.txt").unwrap_err();
    assert_eq!(
        err("a a\n", &[edit("", "x")]).to_string(),
        "oldText must not be empty in f.txt."
    );
    assert_eq!(
        err("a\n", &[edit("a", "b"), edit("", "x")]),
        EditError::EmptyOldText {
            index: Some(1),
            path: "f.txt".into()
        }
    );
    let not_found = err("a\n", &[edit("zz", "y")]);
    assert!(
        matches!(not_found, EditError::NotFound { index: None, .. }),
        "{not_found:?}"
    );
    assert!(not_found.to_string().starts_with(
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
    ));
    assert!(
        err("a\n", &[edit("zz", "y"), edit("a", "b")])
            .to_string()
            .starts_with("Could not find edits[0] in f.txt. The old text must match exactly")
    );
    assert_eq!(
        err("a a\n", &[edit("a", "b")]).to_string(),
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        err("a a b\n", &[edit("b", "c"), edit("a", "z")]).to_string(),
        "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        err("abc\n", &[edit("ab", "x"), edit("bc", "y")]).to_string(),
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
    assert_eq!(
        err("abc\n", &[edit("b", "b")]).to_string(),
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
    );
    assert_eq!(
        err("abc\n", &[edit("a", "a"), edit("c", "c")]).to_string(),
        "No changes made to f.txt. The replacements produced identical content."
    );
}

#[test]
fn exact_single_and_multi() {
    assert_eq!(
        apply("Hello, world!", &[edit("world", "testing")]).unwrap(),
        "Hello, testing!"
    );
    assert_eq!(
        apply("a\nb\nc\n", &[edit("c", "C"), edit("a", "A")]).unwrap(),
        "A\nb\nC\n"
    );
}

#[test]
fn crlf_file_keeps_crlf_and_untouched_lines() {
    let content = "one\r\ntwo\r\nthree\nfour\r\n";
    assert_eq!(
        apply(content, &[edit("two\nthree", "2\n3")]).unwrap(),
        "one\r\n2\r\n3\nfour\r\n"
    );
    // A LF-first file: inserted newlines are LF, other CRLFs are untouched.
    let content = "a\nb\r\nc\n";
    assert_eq!(
        apply(content, &[edit("a", "x\ny")]).unwrap(),
        "x\ny\nb\r\nc\n"
    );
}

#[test]
fn fuzzy_match_replaces_only_the_span() {
    let content = "say \u{201C}hi\u{201D} now   \nkeep \u{2018}this\u{2019}\n";
    let out = apply(content, &[edit("say \"hi\"", "say \"bye\"")]).unwrap();
    assert_eq!(out, "say \"bye\" now   \nkeep \u{2018}this\u{2019}\n");
    // Trailing whitespace inside a multi-line span is covered by the match.
    let content = "foo   \nbar\nbaz  \n";
    assert_eq!(
        apply(content, &[edit("foo\nbar", "X")]).unwrap(),
        "X\nbaz  \n"
    );
}

#[test]
fn duplicates_are_counted_in_fuzzy_space() {
    let err = apply("hello world   \nhello world\n", &[edit("hello world", "x")]).unwrap_err();
    assert_eq!(
        err,
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
}

#[test]
fn overlap_and_empty_and_no_change() {
    let err = apply("abcdef", &[edit("abcd", "x"), edit("cdef", "y")]).unwrap_err();
    assert_eq!(
        err,
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
    assert_eq!(
        apply("abcdef", &[edit("abc", "x"), edit("def", "y")]).unwrap(),
        "xy"
    );
    assert_eq!(
        apply("x", &[edit("", "y")]).unwrap_err(),
        "oldText must not be empty in f.txt."
    );
    assert!(
        apply("same", &[edit("same", "same")])
            .unwrap_err()
            .starts_with("No changes made to f.txt.")
    );
}

#[test]
fn not_found_context_blocks() {
    let content = "fn main() {\n    println!(\"hello\");\n}\n";
    let err = apply(content, &[edit("    println!(\"goodbye\");", "x")]).unwrap_err();
    assert_eq!(
        err,
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines.\nClosest match is around line 2:\n  1: fn main() {\n  2:     println!(\"hello\");\n  3: }\n  4: "
    );
    let err = apply(content, &[edit("zzz", "x")]).unwrap_err();
    assert!(
        err.ends_with(
            "File starts with:\n  1: fn main() {\n  2:     println!(\"hello\");\n  3: }\n  4: "
        ),
        "{err}"
    );
    let err = apply(content, &[edit("\nzzz", "x")]).unwrap_err();
    assert!(err.ends_with("\nFile is empty."), "{err}");
}

#[test]
fn diff_format() {
    let (diff, patch, first) = diff_outputs("Hello, world!", "Hello, testing!", "f.txt");
    assert_eq!(diff, "-1 Hello, world!\n+1 Hello, testing!");
    assert_eq!(first, 1);
    assert!(
        patch.starts_with("--- f.txt\n+++ f.txt\n@@ -1 +1 @@"),
        "{patch}"
    );
    let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
    let new = old.replace("l10\n", "X\n");
    let (diff, _, first) = diff_outputs(&old, &new, "f");
    assert_eq!(first, 10);
    let lines: Vec<&str> = diff.lines().collect();
    assert_eq!(lines[0], "    ...");
    assert_eq!(lines[1], "  6 l6");
    assert_eq!(lines[5], "-10 l10");
    assert_eq!(lines[6], "+10 X");
    assert_eq!(*lines.last().unwrap(), "    ...");
}
