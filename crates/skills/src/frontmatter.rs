//! Reading a Markdown file with YAML frontmatter, bounded and non-blocking.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::Error;

/// The largest file this crate reads (a `SKILL.md` or a prompt template): 256 KiB.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Alias replays allowed in one frontmatter: far above any honest file, far
/// below what an alias bomb expands to.
const MAX_ALIAS_EVENTS: usize = 10_000;

/// A file split into its frontmatter (a YAML mapping) and its body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frontmatter {
    /// The YAML mapping, empty when the file has none.
    pub fields: Map<String, Value>,
    /// The text after the frontmatter, trimmed.
    pub body: String,
}

impl Frontmatter {
    /// A string field, `None` when absent or not a string.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
}

/// Splits `text` as Pi does: a BOM is stripped and line ends become `\n`;
/// frontmatter exists only when the text starts with `---`, and it ends at the
/// first `\n---` after that. The YAML is parsed under an alias budget.
///
/// An opening `---` that is never closed is an error (Pi reads the whole file
/// as body, which loses the description silently).
///
/// ```
/// let fm = agent_skills::parse_frontmatter("---\nname: x\n---\n\nBody\n").unwrap();
/// assert_eq!(fm.string("name"), Some("x"));
/// assert_eq!(fm.body, "Body");
/// ```
pub fn parse_frontmatter(text: &str) -> Result<Frontmatter, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return Ok(Frontmatter {
            fields: Map::new(),
            body: normalized,
        });
    }
    let Some(end) = normalized.get(3..).and_then(|rest| rest.find("\n---")) else {
        return Err(Error::UnclosedFrontmatter);
    };
    let end = end + 3;
    let yaml = normalized.get(4..end).unwrap_or("");
    let body = normalized.get(end + 4..).unwrap_or("").trim().to_string();
    let fields = parse_yaml(yaml)?;
    Ok(Frontmatter { fields, body })
}

/// Parses a YAML mapping with alias limits; an empty document is an empty map.
fn parse_yaml(yaml: &str) -> Result<Map<String, Value>, Error> {
    if yaml.trim().is_empty() {
        return Ok(Map::new());
    }
    let mut options = serde_saphyr::Options::default();
    options.alias_limits.max_total_replayed_events = MAX_ALIAS_EVENTS;
    options.alias_limits.max_replay_stack_depth = 16;
    let value: Value = serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|e| Error::Yaml(first_line(&e.to_string())))?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(Error::Yaml("frontmatter is not a mapping".into())),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Reads a regular file of at most [`MAX_FILE_BYTES`]: opened non-blocking
/// (a FIFO never hangs), checked with `fstat`, never read past the cap.
pub fn read_bounded(path: &Path) -> Result<String, Error> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(Error::Io)?;
    let meta = file.metadata().map_err(Error::Io)?;
    if !meta.is_file() {
        return Err(Error::NotRegular);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Error::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::TooLarge(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| Error::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_bom_and_trimmed_body() {
        let fm = parse_frontmatter("\u{feff}---\r\ndescription: d\r\n---\r\n\r\nHi\r\n").unwrap();
        assert_eq!(fm.string("description"), Some("d"));
        assert_eq!(fm.body, "Hi");
    }

    #[test]
    fn no_frontmatter_keeps_body_untrimmed() {
        let fm = parse_frontmatter("Hello\n").unwrap();
        assert!(fm.fields.is_empty());
        assert_eq!(fm.body, "Hello\n");
    }

    #[test]
    fn unclosed_frontmatter_is_an_error() {
        assert!(matches!(
            parse_frontmatter("---\nname: x\ndescription: y\n"),
            Err(Error::UnclosedFrontmatter)
        ));
    }

    #[test]
    fn unquoted_colon_is_a_yaml_error() {
        assert!(matches!(
            parse_frontmatter("---\ndescription: a: b\n---\n"),
            Err(Error::Yaml(_))
        ));
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut yaml = String::from(
            "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
        let mut prev = "a";
        for n in names {
            yaml.push_str(&format!(
                "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
            prev = n;
        }
        yaml.push_str("description: x\n---\nbody\n");
        assert!(matches!(parse_frontmatter(&yaml), Err(Error::Yaml(_))));
    }

    #[test]
    fn multi_line_values() {
        let fm = parse_frontmatter("---\ndescription: |\n  one\n  two\n---\nb").unwrap();
        assert_eq!(fm.string("description"), Some("one\ntwo\n"));
    }

    #[test]
    fn scalar_frontmatter_is_refused() {
        assert!(parse_frontmatter("---\njust text\n---\n").is_err());
    }
}
