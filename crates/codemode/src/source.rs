//! The tool's input: JavaScript, optionally led by one options line
//! `// @options: {"max_output_tokens": 2000, "timeout_ms": 60000}`.

/// What leads an options line.
pub const OPTIONS_PREFIX: &str = "// @options:";

/// The largest `timeout_ms` (what a JavaScript timer can hold).
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// A script with its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSource {
    /// The code. An options line is replaced by an empty line, so line
    /// numbers in errors match the input.
    pub code: String,
    /// `max_output_tokens`, if given.
    pub max_output_tokens: Option<u64>,
    /// `timeout_ms`, if given.
    pub timeout_ms: Option<u64>,
}

/// Why an input is not a script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(String);

const FIELDS: &str = "`max_output_tokens` and `timeout_ms`";

/// Splits the options line from the code and checks both.
///
/// ```
/// use agent_codemode::parse_source;
/// let s = parse_source("// @options: {\"timeout_ms\": 500}\nreturn 1").unwrap();
/// assert_eq!(s.timeout_ms, Some(500));
/// assert_eq!(s.code, "\nreturn 1");
/// assert!(parse_source("return 1\n// @options: {}").is_err());
/// assert!(parse_source("   ").is_err());
/// ```
pub fn parse_source(input: &str) -> Result<ScriptSource, SourceError> {
    if input.trim().is_empty() {
        return Err(SourceError(
            "expected JavaScript source (not empty); it may start with one line `// @options: {\"max_output_tokens\": 1000}`".into(),
        ));
    }
    if let Some((index, _)) = input
        .split('\n')
        .enumerate()
        .skip(1)
        .find(|(_, line)| line.trim_start().starts_with(OPTIONS_PREFIX))
    {
        return Err(SourceError(format!(
            "the {OPTIONS_PREFIX} line must be the first line of the input; found one on line {}",
            index + 1
        )));
    }
    let first = input
        .split('\n')
        .next()
        .unwrap_or("")
        .trim_end_matches('\r');
    let Some(directive) = first.trim_start().strip_prefix(OPTIONS_PREFIX) else {
        return Ok(ScriptSource {
            code: input.to_string(),
            max_output_tokens: None,
            timeout_ms: None,
        });
    };
    let code = match input.find('\n') {
        Some(newline) => input[newline..].to_string(),
        None => String::new(),
    };
    if code.trim().is_empty() {
        return Err(SourceError(
            "the @options line must be followed by JavaScript on the next lines".into(),
        ));
    }
    let directive = directive.trim();
    let value: serde_json::Value = serde_json::from_str(directive).map_err(|e| {
        SourceError(format!(
            "@options must be valid JSON with the fields {FIELDS}: {e}"
        ))
    })?;
    let serde_json::Value::Object(fields) = value else {
        return Err(SourceError(format!(
            "@options must be a JSON object with the fields {FIELDS}"
        )));
    };
    let mut source = ScriptSource {
        code,
        max_output_tokens: None,
        timeout_ms: None,
    };
    for (key, value) in &fields {
        let number = value.as_u64().filter(|n| *n < (1u64 << 53));
        match key.as_str() {
            "max_output_tokens" => {
                source.max_output_tokens = Some(number.ok_or_else(|| {
                    SourceError(
                        "@options field `max_output_tokens` must be a non-negative integer".into(),
                    )
                })?);
            }
            "timeout_ms" => {
                let ms = number.filter(|n| *n > 0 && *n <= MAX_TIMEOUT_MS).ok_or_else(|| {
                    SourceError(format!(
                        "@options field `timeout_ms` must be a positive integer up to {MAX_TIMEOUT_MS}"
                    ))
                })?;
                source.timeout_ms = Some(ms);
            }
            other => {
                return Err(SourceError(format!(
                    "@options supports only {FIELDS}; got `{other}`"
                )));
            }
        }
    }
    Ok(source)
}

/// A tool name as a JavaScript identifier: every character that cannot be
/// in one becomes `_`, and a leading digit gets a `_` before it.
///
/// ```
/// assert_eq!(agent_codemode::js_identifier("mcp__dev-radius__search"), "mcp__dev_radius__search");
/// assert_eq!(agent_codemode::js_identifier("3d"), "_3d");
/// ```
pub fn js_identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}
