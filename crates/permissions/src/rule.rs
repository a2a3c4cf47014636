//! One rule: `Tool` or `Tool(specifier)` as Claude Code writes them, what
//! its tool name covers, and how its specifier meets a command or a path.

use std::path::Path;

use super::ToolShape;

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct PermissionRule {
    /// As written in the settings.
    pub text: String,
    /// The tool name as written (`Bash`, `Read`, `mcp__x__y`, ...).
    pub tool: String,
    pub(super) specifier: Option<Specifier>,
}

#[derive(Debug, Clone)]
pub(super) enum Specifier {
    /// `prefix:*`
    Prefix(String),
    /// Exact text, `*` matching any run.
    Pattern(Wildcard),
    /// A path glob.
    Path(agent_tool::path_filter::PathGlob),
}

/// A rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule:?}: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// Why it does not parse.
    pub reason: String,
}

/// What a rule's tool name means, besides naming a tool of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RuleKind {
    /// `Read`: arguments a tool reads.
    Read,
    /// `Edit`: arguments a tool writes.
    Edit,
    /// `Bash`: a shell command argument.
    Shell,
    /// Any other name: only the tool of that name.
    Named,
}

pub(super) fn rule_kind(tool: &str) -> RuleKind {
    match tool.to_ascii_lowercase().as_str() {
        "read" => RuleKind::Read,
        "edit" => RuleKind::Edit,
        "bash" => RuleKind::Shell,
        _ => RuleKind::Named,
    }
}

impl PermissionRule {
    /// Parses `Tool` or `Tool(specifier)`; path globs are anchored at `cwd`.
    ///
    /// # Errors
    /// An empty name, unbalanced parentheses, a glob that does not parse.
    pub fn parse(text: &str, cwd: &Path) -> Result<Self, RuleError> {
        let err = |m: &str| RuleError {
            rule: text.to_string(),
            reason: m.to_string(),
        };
        let text_trim = text.trim();
        let (tool, specifier) = match text_trim.find('(') {
            None => (text_trim, None),
            Some(open) => {
                let Some(inner) = text_trim[open + 1..].strip_suffix(')') else {
                    return Err(err("expected Tool(specifier)"));
                };
                (&text_trim[..open], Some(inner.trim()))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(err("expected a tool name"));
        }
        // A command rule for `Bash`, or any rule in the command grammar
        // (`prefix:*`); a path glob otherwise.
        let command_rule =
            rule_kind(tool) == RuleKind::Shell || specifier.is_some_and(|s| s.ends_with(":*"));
        let specifier = match specifier {
            None | Some("") | Some("*") | Some("**") => None,
            Some(s) if !command_rule => Some(Specifier::Path(
                agent_tool::path_filter::PathGlob::new(s, cwd).map_err(|e| err(&e.to_string()))?,
            )),
            Some(s) => match s.strip_suffix(":*") {
                Some(prefix) => Some(Specifier::Prefix(prefix.trim().to_string())),
                None => Some(Specifier::Pattern(Wildcard::new(s).map_err(|e| err(&e))?)),
            },
        };
        Ok(PermissionRule {
            text: text.to_string(),
            tool: tool.to_string(),
            specifier,
        })
    }

    /// Whether the rule names the tool itself (by name, or its MCP server).
    pub(super) fn names_by_name(&self, tool: &str) -> bool {
        self.tool.eq_ignore_ascii_case(tool)
            || (self.tool.starts_with("mcp__")
                && self.tool.matches("__").count() == 1
                && tool.starts_with(&format!("{}__", self.tool)))
    }

    /// Whether the rule is about `tool` at all: by name, or by what the
    /// tool declares (see the module docs).
    pub(super) fn names(&self, tool: &ToolShape) -> bool {
        self.names_by_name(&tool.name)
            || match rule_kind(&self.tool) {
                RuleKind::Read => tool.touches(agent_tool::PathAccess::Read),
                RuleKind::Edit => tool.touches(agent_tool::PathAccess::Write),
                RuleKind::Shell => tool.command.is_some(),
                RuleKind::Named => false,
            }
    }

    /// Whether some command starting with `known` (words then a space, or
    /// nothing) could match this command rule.
    pub(super) fn might_match_from(&self, known: &str) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Prefix(p)) => {
                p.starts_with(known) || known.starts_with(&format!("{p} "))
            }
            Some(Specifier::Pattern(p)) => {
                let literal = p.literal_start();
                literal.starts_with(known) || known.starts_with(literal)
            }
            Some(Specifier::Path(_)) => false,
        }
    }

    /// Whether the words the rule spells out are whole words of the command
    /// (each of the rule's literal words equal to one word, in order), so a
    /// single word holding a blank cannot pass for two.
    pub(super) fn matches_words(&self, words: &[String]) -> bool {
        let literal = match &self.specifier {
            None | Some(Specifier::Path(_)) => return true,
            Some(Specifier::Prefix(p)) => p.as_str(),
            Some(Specifier::Pattern(p)) => p.literal_start(),
        };
        let complete =
            matches!(self.specifier, Some(Specifier::Prefix(_))) || literal.ends_with(' ');
        let tokens: Vec<&str> = literal.split(' ').filter(|t| !t.is_empty()).collect();
        for (i, token) in tokens.iter().enumerate() {
            let Some(word) = words.get(i) else {
                return false;
            };
            if word.contains(char::is_whitespace) {
                return false;
            }
            let last = i + 1 == tokens.len();
            let fits = if last && !complete {
                word.starts_with(token)
            } else {
                word == token
            };
            if !fits {
                return false;
            }
        }
        true
    }

    pub(super) fn matches_command(&self, line: &str) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Prefix(p)) => line == p || line.starts_with(&format!("{p} ")),
            Some(Specifier::Pattern(p)) => p.matches(line),
            Some(Specifier::Path(_)) => false,
        }
    }
}

/// The first rule of `rules` that a later word of `words` names when taken
/// as the start of a command (the program being one that might run its
/// arguments), with the line it would run. A word holding a whole command
/// line (`-c 'rm v'`) is split in turn.
pub(super) fn runnable_suffix_match<'r>(
    words: &[String],
    rules: &[&'r PermissionRule],
    depth: usize,
) -> Option<(&'r PermissionRule, String)> {
    let program = basename_of(words.first()?);
    if super::shell::leaves_arguments_alone(program) || depth > 4 {
        return None;
    }
    for (j, whole) in words.iter().enumerate().skip(1) {
        // The word itself, an option's value (`--to-command=rm v`,
        // `ProxyCommand=rm v`), each without a leading `!` (vim's and git
        // aliases' shell escape).
        let mut forms = vec![whole.as_str()];
        if let Some((_, value)) = whole.split_once('=') {
            forms.push(value);
        }
        for word in forms {
            let word = word.trim_start_matches('!');
            let mut line = basename_of(word).to_string();
            for rest in &words[j + 1..] {
                line.push(' ');
                line.push_str(rest);
            }
            if let Some(rule) = rules.iter().find(|r| r.matches_command(&line)) {
                return Some((rule, line));
            }
            if !word.contains(|c: char| c.is_whitespace() || ";|&".contains(c)) {
                continue;
            }
            for inner in super::shell::split_commands(word).commands {
                let inner_line = inner.join(" ");
                if let Some(rule) = rules.iter().find(|r| r.matches_command(&inner_line)) {
                    return Some((rule, inner_line));
                }
                if let Some(found) = runnable_suffix_match(&inner, rules, depth + 1) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// Whether `wanted` appears in `words` in order (not necessarily next to
/// each other); a word may also carry the wanted one after `=`
/// (`--command=push`).
pub(super) fn is_subsequence(wanted: &[&str], words: &[String]) -> bool {
    let mut it = words.iter();
    wanted.iter().all(|w| {
        it.by_ref()
            .any(|word| word == w || word.rsplit('=').next() == Some(*w))
    })
}

/// The last component of a command path (`/bin/rm` is `rm`).
pub(super) fn basename_of(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A command pattern: `*` matches any run of characters, `/` and line
/// breaks included; every other character, `?`, `[`, `{` and `\` among
/// them, stands for itself.
#[derive(Debug, Clone)]
pub(super) struct Wildcard {
    text: String,
    matcher: globset::GlobSet,
}

impl Wildcard {
    /// The pattern as written in the rule.
    ///
    /// # Errors
    /// A pattern too large to compile.
    pub(super) fn new(text: &str) -> Result<Self, String> {
        let glob = agent_tool::wildcard::wildcard_glob(text).map_err(|e| e.to_string())?;
        // A set, not `compile_matcher`, which panics where a set's build
        // returns an error (a pattern past the regex size limit).
        let matcher = globset::GlobSetBuilder::new()
            .add(glob)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Wildcard {
            text: text.to_string(),
            matcher,
        })
    }

    /// The text before the first `*` (all of it when there is none).
    pub(super) fn literal_start(&self) -> &str {
        self.text.split('*').next().unwrap_or("")
    }

    /// Whether the whole of `text` matches.
    pub(super) fn matches(&self, text: &str) -> bool {
        self.matcher.is_match(text)
    }
}

#[cfg(test)]
mod tests {
    use super::Wildcard;

    fn matches(pattern: &str, text: &str) -> bool {
        Wildcard::new(pattern).unwrap().matches(text)
    }

    #[test]
    fn a_star_matches_any_run() {
        assert!(matches("npm run *", "npm run test"));
        assert!(matches("npm run *", "npm run "));
        assert!(!matches("npm run *", "npm run"));
        assert!(matches("git * --dry-run", "git push origin --dry-run"));
        assert!(!matches("git * --dry-run", "git push --dry-run --force"));
        assert!(matches("*.sh", "./a/b.sh"));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*b*c", "a-c-b"));
        // Overlapping ends: the text must hold both, not share them.
        assert!(!matches("ab*ba", "aba"));
        assert!(matches("ab*ba", "abba"));
        assert!(matches("", ""));
        assert!(!matches("", "x"));
        assert!(matches("echo", "echo"));
        assert!(!matches("echo", "echo x"));
    }

    #[test]
    fn a_star_crosses_slashes_and_lines() {
        assert!(matches("cat *", "cat /etc/passwd"));
        assert!(matches("ls */x", "ls a/b/c/x"));
        assert!(matches("echo *", "echo a\nb"));
        assert!(matches("echo *", "echo a\nrm -rf /"));
    }

    #[test]
    fn two_stars_are_one_star() {
        assert!(matches("ls a/**/b", "ls a/x/y/b"));
        assert!(!matches("ls a/**/b", "ls a/b"));
        assert!(!matches("**/b", "b"));
        assert!(matches("**/b", "/b"));
        assert!(matches("x**", "x/y"));
    }

    #[test]
    fn a_pattern_too_large_is_an_error() {
        assert!(Wildcard::new(&"a*".repeat(400_000)).is_err());
        assert!(Wildcard::new(&"a".repeat(400_000)).is_ok());
    }

    #[test]
    fn other_glob_characters_stand_for_themselves() {
        assert!(matches("ls ?", "ls ?"));
        assert!(!matches("ls ?", "ls a"));
        assert!(matches("ls [ab]", "ls [ab]"));
        assert!(!matches("ls [ab]", "ls a"));
        assert!(matches("echo {a,b}*", "echo {a,b}c"));
        assert!(!matches("echo {a,b}", "echo a"));
        assert!(matches("echo \\*", "echo \\x"));
        assert!(!matches("echo \\*", "echo *"));
        assert!(matches("echo [*]*", "echo [*]x"));
        assert!(!matches("echo [*]", "echo x"));
        assert!(matches("echo ]*[", "echo ]x["));
        assert!(matches("héllo *ü", "héllo wörld ü"));
    }
}
