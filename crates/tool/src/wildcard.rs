//! Wildcards where `*` is the only special character, as glob patterns:
//! permission rules' specifiers and the sandbox's secret-variable patterns
//! are written that way.

/// The glob for `pattern`, in which `*` matches any run of characters
/// (`/` included) and every other character stands for itself: glob
/// syntax (`?`, `[...]`, `{...}`, `\`) is literal.
///
/// A run of stars is one star: left as `**`, globset would read `a/**/b`
/// as "any directories" and let it match `a/b`.
///
/// ```
/// let glob = agent_tool::wildcard::wildcard_glob("git *--force?").unwrap().compile_matcher();
/// assert!(glob.is_match("git push origin --force?"));
/// assert!(!glob.is_match("git push origin --forceX"));
/// let glob = agent_tool::wildcard::wildcard_glob("a/**/b").unwrap().compile_matcher();
/// assert!(!glob.is_match("a/b"));
/// assert!(glob.is_match("a/x/y/b"));
/// ```
///
/// # Errors
/// A pattern too large to compile.
pub fn wildcard_glob(pattern: &str) -> Result<globset::Glob, globset::Error> {
    let mut glob = String::with_capacity(pattern.len());
    let mut after_star = false;
    for c in pattern.chars() {
        let star = c == '*';
        match c {
            '*' if after_star => {}
            '*' => glob.push('*'),
            '?' | '[' | ']' | '{' | '}' => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
            }
            c => glob.push(c),
        }
        after_star = star;
    }
    globset::GlobBuilder::new(&glob)
        .literal_separator(false)
        .backslash_escape(false)
        .build()
}
