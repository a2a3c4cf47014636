//! Pi's shell-like argument splitting and one-pass placeholder substitution.

use crate::Error;

/// The largest text a template expansion may produce: 1 MiB.
pub const MAX_EXPANDED_BYTES: usize = 1024 * 1024;

/// JavaScript's `\s`: Unicode white space plus U+FEFF, without U+0085.
pub(crate) fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// Splits command arguments as Pi's `parseCommandArgs` does.
///
/// White space separates arguments; a quote (`"` or `'`) opens quoting only at
/// the start of an argument; inside quotes a backslash before the open quote's
/// character gives that character; an unclosed quote is kept as text and the
/// rest is parsed again; `""` and `''` are kept as empty arguments.
///
/// ```
/// use agent_skills::parse_command_args;
/// assert_eq!(parse_command_args(r#"a "b c" doesn't ''"#), ["a", "b c", "doesn't", ""]);
/// ```
pub fn parse_command_args(input: &str) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if is_js_space(c) {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i + 1 == chars.len() {
            // Unclosed: the quote is text, and parsing resumes after it.
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// A digit run as an index; absurdly long runs saturate (they index nothing).
fn number(digits: &str) -> usize {
    digits.parse().unwrap_or(usize::MAX)
}

fn digits_at(bytes: &[u8], at: usize) -> usize {
    bytes
        .get(at..)
        .map(|rest| rest.iter().take_while(|b| b.is_ascii_digit()).count())
        .unwrap_or(0)
}

/// One recognised placeholder: its length in the template and its value.
fn placeholder<'a>(t: &'a str, args: &'a [String], all: &'a str) -> Option<(usize, String)> {
    let b = t.as_bytes();
    if b.first() != Some(&b'$') {
        return None;
    }
    let arg = |n: usize| -> Option<&String> { n.checked_sub(1).and_then(|i| args.get(i)) };
    if b.get(1) == Some(&b'{') {
        // ${N:-default}, ${@:-default}, ${ARGUMENTS:-default}
        let target_len = match digits_at(b, 2) {
            0 if t[2..].starts_with("ARGUMENTS") => 9,
            0 if t[2..].starts_with('@') => 1,
            n => n,
        };
        if target_len > 0 && t[2 + target_len..].starts_with(":-") {
            let start = 2 + target_len + 2;
            if let Some(close) = t[start..].find('}') {
                let target = &t[2..2 + target_len];
                let default = &t[start..start + close];
                let value = match target {
                    "@" | "ARGUMENTS" => Some(all),
                    digits => arg(number(digits)).map(String::as_str),
                };
                let out = match value {
                    Some(v) if !v.is_empty() => v,
                    _ => default,
                };
                return Some((start + close + 1, out.to_string()));
            }
        }
        // ${@:N} and ${@:N:L}
        if t[2..].starts_with("@:") {
            let n = digits_at(b, 4);
            if n > 0 {
                let start = number(&t[4..4 + n]).saturating_sub(1);
                let mut end = 4 + n;
                let mut length = None;
                if b.get(end) == Some(&b':') {
                    let l = digits_at(b, end + 1);
                    if l > 0 {
                        length = Some(number(&t[end + 1..end + 1 + l]));
                        end += 1 + l;
                    }
                }
                if b.get(end) == Some(&b'}') {
                    let from = start.min(args.len());
                    let to = match length {
                        Some(l) => from.saturating_add(l).min(args.len()),
                        None => args.len(),
                    };
                    return Some((end + 1, args[from..to].join(" ")));
                }
            }
        }
        return None;
    }
    if t[1..].starts_with("ARGUMENTS") {
        return Some((10, all.to_string()));
    }
    if b.get(1) == Some(&b'@') {
        return Some((2, all.to_string()));
    }
    let n = digits_at(b, 1);
    if n > 0 {
        let value = arg(number(&t[1..1 + n])).cloned().unwrap_or_default();
        return Some((1 + n, value));
    }
    None
}

/// Substitutes placeholders in one pass over `template`, as Pi's
/// `substituteArgs`: `$1`…, `$@`, `$ARGUMENTS`, `${N:-default}`,
/// `${@:-default}`, `${ARGUMENTS:-default}`, `${@:N}`, `${@:N:L}`. Values are
/// never scanned again, so an argument holding `$1` stays as typed. Fails when
/// the result would exceed [`MAX_EXPANDED_BYTES`].
///
/// ```
/// use agent_skills::substitute_args;
/// let args = vec!["a".to_string(), "$1".to_string()];
/// assert_eq!(substitute_args("$2 ${3:-none} [$@]", &args).unwrap(), "$1 none [a $1]");
/// ```
pub fn substitute_args(template: &str, args: &[String]) -> Result<String, Error> {
    let all = args.join(" ");
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find('$') {
        push_capped(&mut out, &rest[..pos])?;
        let here = &rest[pos..];
        match placeholder(here, args, &all) {
            Some((len, value)) => {
                push_capped(&mut out, &value)?;
                rest = &here[len..];
            }
            None => {
                push_capped(&mut out, "$")?;
                rest = &here[1..];
            }
        }
    }
    push_capped(&mut out, rest)?;
    Ok(out)
}

fn push_capped(out: &mut String, s: &str) -> Result<(), Error> {
    if out.len() + s.len() > MAX_EXPANDED_BYTES {
        return Err(Error::ExpansionTooLarge(MAX_EXPANDED_BYTES));
    }
    out.push_str(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splitting() {
        assert_eq!(parse_command_args("  a\n b\t"), v(&["a", "b"]));
        assert_eq!(
            parse_command_args(r#""say \"hi\"" x"#),
            v(&[r#"say "hi""#, "x"])
        );
        assert_eq!(parse_command_args(r#"'a\b'"#), v(&[r"a\b"]));
        assert_eq!(parse_command_args(r#"a"b c"#), v(&["a\"b", "c"]));
        assert_eq!(
            parse_command_args("\"open quote here"),
            v(&["\"open", "quote", "here"])
        );
        assert_eq!(parse_command_args("'' \"\""), v(&["", ""]));
        assert_eq!(parse_command_args(""), Vec::<String>::new());
    }

    #[test]
    fn placeholders() {
        let a = v(&["one", "two", "three"]);
        let s = |t: &str| substitute_args(t, &a).unwrap();
        assert_eq!(s("$1-$2-$3-$4"), "one-two-three-");
        assert_eq!(s("$@|$ARGUMENTS"), "one two three|one two three");
        assert_eq!(s("${2:-x} ${4:-x} ${0:-z}"), "two x z");
        assert_eq!(
            s("${@:2} ${@:0} ${@:2:1} ${@:9}"),
            "two three one two three two "
        );
        assert_eq!(s("${@:-d} ${ARGUMENTS:-d}"), "one two three one two three");
        assert_eq!(substitute_args("${@:-d}", &[]).unwrap(), "d");
        assert_eq!(s("$$ $x ${x} ${1} $0 ${@:} $"), "$$ $x ${x} ${1}  ${@:} $");
        assert_eq!(s("$10 $ARGUMENTSX"), " one two threeX");
        assert_eq!(s("${1:-a}b}"), "oneb}");
    }

    #[test]
    fn values_are_not_rescanned() {
        let a = v(&["$100", "${@:1}", "$@"]);
        assert_eq!(substitute_args("$1 $2 $3", &a).unwrap(), "$100 ${@:1} $@");
        assert_eq!(substitute_args("${4:-$1}", &a).unwrap(), "$1");
    }

    #[test]
    fn empty_argument_takes_the_default() {
        assert_eq!(substitute_args("${1:-d}", &v(&[""])).unwrap(), "d");
    }

    #[test]
    fn huge_numbers_index_nothing() {
        let a = v(&["a"]);
        assert_eq!(substitute_args("$99999999999999999999999", &a).unwrap(), "");
        assert_eq!(
            substitute_args("${@:99999999999999999999:2}", &a).unwrap(),
            ""
        );
        assert_eq!(
            substitute_args("${@:1:99999999999999999999}", &a).unwrap(),
            "a"
        );
    }

    #[test]
    fn repeated_all_arguments_are_capped() {
        let template = "$@".repeat(100_000);
        let big = vec!["x".repeat(100)];
        assert!(matches!(
            substitute_args(&template, &big),
            Err(Error::ExpansionTooLarge(_))
        ));
        let small = vec!["x".to_string()];
        assert_eq!(substitute_args(&template, &small).unwrap().len(), 100_000);
    }
}
