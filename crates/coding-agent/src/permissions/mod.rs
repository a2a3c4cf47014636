//! Permission rules: which tool calls run, which need a person's approval,
//! which are refused.
//!
//! Settings (`permissions`, Claude Code's grammar):
//!
//! ```json
//! {"permissions": {
//!   "allow": ["Bash(git diff:*)", "Bash(npm run test)", "Read", "Edit(src/**)"],
//!   "ask":   ["Bash(git push:*)"],
//!   "deny":  ["Bash(rm:*)", "Read(./secrets/**)", "Grep", "mcp__tracker__delete_issue"]
//! }}
//! ```
//!
//! - `Tool` alone matches every call of the tool; `Bash(prefix:*)` a
//!   command that is `prefix` or starts with `prefix `; `Bash(text)` exactly
//!   that command (`*` matches any run); `Read(glob)`, `Edit(glob)`,
//!   `Write(glob)` a path (relative globs are relative to the working
//!   directory, `~/` is the home directory).
//! - Which tools a rule covers comes from what the tools declare
//!   ([`ToolShape`], from a tool definition's
//!   [`PathArgument`](agent_tool::PathArgument)s and
//!   command argument), never from tool names: `Read` rules cover every
//!   argument a tool declares it reads (read, grep, find, ls, and any custom
//!   tool that says so); their deny and ask forms also cover arguments a
//!   tool writes. `Edit` rules cover arguments a tool writes; `Bash` rules
//!   cover tools that declare a shell command argument. Any other name (or
//!   the same names) also matches a tool of that name, ignoring case;
//!   `mcp__server` matches all of a server's tools.
//! - A deny or ask rule with a specifier that names a tool by name, where
//!   the tool declares nothing the specifier could be judged on, asks.
//! - Precedence: deny, then ask, then allow, then the default.
//! - A bash command is judged by its simple commands
//!   ([`split_commands`]): denied if any part is denied, asked if any part
//!   asks; allowed by rules only if every part is allowed and the line is
//!   [plain](ShellCommands::plain). What the splitter cannot model
//!   ([opaque](ShellCommands::opaque)) is asked when deny or ask rules
//!   exist: deny lists are a convenience, the sandbox is the boundary.
//! - The default: a call no rule names runs, unless the tool has allow
//!   rules, in which case it asks (an allow list means "only these without
//!   asking").
//! - A project's `.pi/settings.json` may add deny and ask rules; its allow
//!   rules are ignored (a cloned repository cannot allow itself `Bash(*)`).

mod continuation;
mod paths;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};

pub use agent_tool::path_filter::PathRuleFilter;
pub use continuation::join_continued_lines;
pub use shell::{ShellCommands, split_commands};

use crate::Settings;

/// Which list a rule comes from, or what was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Runs.
    Allow,
    /// Needs approval.
    Ask,
    /// Refused.
    Deny,
}

impl Permission {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct PermissionRule {
    /// As written in the settings.
    pub text: String,
    /// The tool name as written (`Bash`, `Read`, `mcp__x__y`, ...).
    pub tool: String,
    specifier: Option<Specifier>,
}

#[derive(Debug, Clone)]
enum Specifier {
    /// `prefix:*`
    Prefix(String),
    /// Exact text, `*` matching any run.
    Pattern(String),
    /// A path glob.
    Path(agent_tool::path_filter::PathGlob),
}

/// A rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permissions: {0}")]
pub struct PermissionConfigError(pub String);

/// What the rules know about a tool: its name and what its arguments
/// mean, as the tool declares them.
///
/// ```
/// use coding_agent::permissions::{Permission, PermissionRules, ToolShape};
/// use coding_agent::PathArgument;
/// use serde_json::json;
/// let rules = PermissionRules::from_lists(&[], &[], &["Read(./.env)"], "/w".as_ref()).unwrap();
/// // A custom tool that declares its `file` argument a path it reads is covered.
/// let viewer = ToolShape::named("viewer").with_path(PathArgument::read("file"));
/// let decision = rules.decide(&viewer, &json!({"file": ".env"}), "/w".as_ref());
/// assert_eq!(decision.permission, Permission::Deny);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolShape {
    /// The tool's name.
    pub name: String,
    /// The arguments it declares as paths.
    pub paths: Vec<agent_tool::PathArgument>,
    /// The argument it declares as a shell command line.
    pub command: Option<String>,
}

impl ToolShape {
    /// A tool that declares nothing.
    pub fn named(name: impl Into<String>) -> Self {
        ToolShape {
            name: name.into(),
            ..Default::default()
        }
    }

    /// What `definition` declares.
    pub fn of(definition: &agent_tool::ToolDefinition) -> Self {
        ToolShape {
            name: definition.name().to_string(),
            paths: definition.path_arguments().to_vec(),
            command: definition.command_argument().map(str::to_string),
        }
    }

    /// The same shape with one more path argument.
    pub fn with_path(mut self, argument: agent_tool::PathArgument) -> Self {
        self.paths.push(argument);
        self
    }

    /// The same shape with this command argument.
    pub fn with_command(mut self, argument: impl Into<String>) -> Self {
        self.command = Some(argument.into());
        self
    }

    /// Whether the tool declares an argument of this access.
    fn touches(&self, access: agent_tool::PathAccess) -> bool {
        self.paths.iter().any(|p| p.access == access)
    }
}

/// What a rule's tool name means, besides naming a tool of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuleKind {
    /// `Read`: arguments a tool reads.
    Read,
    /// `Edit`: arguments a tool writes.
    Edit,
    /// `Bash`: a shell command argument.
    Shell,
    /// Any other name: only the tool of that name.
    Named,
}

fn rule_kind(tool: &str) -> RuleKind {
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
    pub fn parse(text: &str, cwd: &Path) -> Result<Self, PermissionConfigError> {
        let err = |m: &str| PermissionConfigError(format!("{text:?}: {m}"));
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
                agent_tool::path_filter::PathGlob::new(s, cwd).map_err(|e| err(&e))?,
            )),
            Some(s) => match s.strip_suffix(":*") {
                Some(prefix) => Some(Specifier::Prefix(prefix.trim().to_string())),
                None => Some(Specifier::Pattern(s.to_string())),
            },
        };
        Ok(PermissionRule {
            text: text.to_string(),
            tool: tool.to_string(),
            specifier,
        })
    }

    /// Whether the rule names the tool itself (by name, or its MCP server).
    fn names_by_name(&self, tool: &str) -> bool {
        self.tool.eq_ignore_ascii_case(tool)
            || (self.tool.starts_with("mcp__")
                && self.tool.matches("__").count() == 1
                && tool.starts_with(&format!("{}__", self.tool)))
    }

    /// Whether the rule is about `tool` at all: by name, or by what the
    /// tool declares (see the module docs).
    fn names(&self, tool: &ToolShape) -> bool {
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
    fn might_match_from(&self, known: &str) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Prefix(p)) => {
                p.starts_with(known) || known.starts_with(&format!("{p} "))
            }
            Some(Specifier::Pattern(p)) => {
                let literal = p.split('*').next().unwrap_or("");
                literal.starts_with(known) || known.starts_with(literal)
            }
            Some(Specifier::Path(_)) => false,
        }
    }

    /// Whether the words the rule spells out are whole words of the command
    /// (each of the rule's literal words equal to one word, in order), so a
    /// single word holding a blank cannot pass for two.
    fn matches_words(&self, words: &[String]) -> bool {
        let literal = match &self.specifier {
            None | Some(Specifier::Path(_)) => return true,
            Some(Specifier::Prefix(p)) => p.as_str(),
            Some(Specifier::Pattern(p)) => p.split('*').next().unwrap_or(""),
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

    fn matches_command(&self, line: &str) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Prefix(p)) => line == p || line.starts_with(&format!("{p} ")),
            Some(Specifier::Pattern(p)) => wildcard(p, line),
            Some(Specifier::Path(_)) => false,
        }
    }
}

/// The first rule of `rules` that a later word of `words` names when taken
/// as the start of a command (the program being one that might run its
/// arguments), with the line it would run. A word holding a whole command
/// line (`-c 'rm v'`) is split in turn.
fn runnable_suffix_match<'r>(
    words: &[String],
    rules: &[&'r PermissionRule],
    depth: usize,
) -> Option<(&'r PermissionRule, String)> {
    let program = basename_of(words.first()?);
    if shell::leaves_arguments_alone(program) || depth > 4 {
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
            for inner in split_commands(word).commands {
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
fn is_subsequence(wanted: &[&str], words: &[String]) -> bool {
    let mut it = words.iter();
    wanted.iter().all(|w| {
        it.by_ref()
            .any(|word| word == w || word.rsplit('=').next() == Some(*w))
    })
}

/// The last component of a command path (`/bin/rm` is `rm`).
fn basename_of(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `*` matches any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The outcome for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionDecision {
    /// What happens.
    pub permission: Permission,
    /// The rule that decided it (`None`: the default).
    pub rule: Option<String>,
    /// For bash: the part of the command the rule matched, or the first
    /// part no allow rule covered.
    pub subject: Option<String>,
}

impl PermissionDecision {
    fn by(permission: Permission, rule: &PermissionRule, subject: Option<String>) -> Self {
        PermissionDecision {
            permission,
            rule: Some(rule.text.clone()),
            subject,
        }
    }

    /// The record sent in the event stream.
    pub fn to_json(&self, source: &str) -> Value {
        json!({"permission": self.permission.as_str(), "rule": self.rule, "subject": self.subject, "source": source})
    }
}

/// Allow, ask and deny rules for one working directory.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    allow: Vec<PermissionRule>,
    ask: Vec<PermissionRule>,
    deny: Vec<PermissionRule>,
}

impl PermissionRules {
    /// No rules: every call runs.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether there is any rule.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// Rules from lists of rule texts.
    ///
    /// # Errors
    /// The first rule that does not parse.
    pub fn from_lists(
        allow: &[&str],
        ask: &[&str],
        deny: &[&str],
        cwd: &Path,
    ) -> Result<Self, PermissionConfigError> {
        let parse = |list: &[&str]| {
            list.iter()
                .map(|r| PermissionRule::parse(r, cwd))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(PermissionRules {
            allow: parse(allow)?,
            ask: parse(ask)?,
            deny: parse(deny)?,
        })
    }

    /// The user's `permissions` plus the project's deny and ask rules (its
    /// allow rules are ignored).
    ///
    /// # Errors
    /// A list of the wrong shape or a rule that does not parse.
    pub fn from_settings(settings: &Settings, cwd: &Path) -> Result<Self, PermissionConfigError> {
        let list = |source: Option<&Value>,
                    key: &str|
         -> Result<Vec<PermissionRule>, PermissionConfigError> {
            match source.and_then(|s| s.get(key)) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v.as_str() {
                        Some(text) => PermissionRule::parse(text, cwd),
                        None => Err(PermissionConfigError(format!("{key} must list strings"))),
                    })
                    .collect(),
                Some(_) => Err(PermissionConfigError(format!(
                    "{key} must be a list of rules"
                ))),
            }
        };
        let user = settings.get("permissions");
        let project = settings.project_value("permissions");
        if user.is_some_and(|u| !u.is_object()) || project.is_some_and(|p| !p.is_object()) {
            return Err(PermissionConfigError(
                "must be an object with allow, ask and deny lists".into(),
            ));
        }
        if list(project, "allow").is_ok_and(|l| !l.is_empty()) {
            tracing::warn!(
                "the project's permissions.allow rules are ignored: a project may only add ask and deny rules"
            );
        }
        let mut rules = PermissionRules {
            allow: list(user, "allow")?,
            ask: list(user, "ask")?,
            deny: list(user, "deny")?,
        };
        rules.ask.extend(list(project, "ask")?);
        rules.deny.extend(list(project, "deny")?);
        Ok(rules)
    }

    /// The decision for a call of `tool` with validated `args`; paths are
    /// resolved against `cwd`.
    pub fn decide(&self, tool: &ToolShape, args: &Value, cwd: &Path) -> PermissionDecision {
        let has_allow = self.allow.iter().any(|r| r.names(tool));
        let default = PermissionDecision {
            permission: if has_allow {
                Permission::Ask
            } else {
                Permission::Allow
            },
            rule: None,
            subject: None,
        };
        if let Some(argument) = &tool.command {
            let command = args.get(argument).and_then(Value::as_str).unwrap_or("");
            return self.decide_command(tool, command, default);
        }
        if let Some(decision) = paths::decide(self, tool, args, cwd, &default) {
            return decision;
        }
        for (list, permission) in [
            (&self.deny, Permission::Deny),
            (&self.ask, Permission::Ask),
            (&self.allow, Permission::Allow),
        ] {
            if let Some(rule) = list.iter().find(|r| r.names(tool) && r.specifier.is_none()) {
                return PermissionDecision::by(permission, rule, None);
            }
        }
        // A rule naming this tool with a specifier the tool gives nothing
        // to judge by (it declares no path or command): it cannot be shown
        // not to apply, so a deny or ask rule asks.
        if let Some(rule) = self
            .deny
            .iter()
            .chain(self.ask.iter())
            .find(|r| r.names(tool) && r.specifier.is_some())
        {
            return PermissionDecision {
                permission: Permission::Ask,
                rule: None,
                subject: Some(format!(
                    "{} (rule {} names it, and it declares no argument to judge)",
                    tool.name, rule.text
                )),
            };
        }
        default
    }

    fn decide_command(
        &self,
        tool: &ToolShape,
        command: &str,
        default: PermissionDecision,
    ) -> PermissionDecision {
        let parts = split_commands(command);
        let lines: Vec<String> = parts.lines();
        // The command name as a bare word too, so `/bin/rm` meets `Bash(rm:*)`.
        let mut by_name: Vec<String> = parts
            .commands
            .iter()
            .filter(|c| c.first().is_some_and(|w| w.contains('/')))
            .map(|c| {
                let mut c = c.clone();
                c[0] = c[0].rsplit('/').next().unwrap_or("").to_string();
                c.join(" ")
            })
            .collect();
        // git's own programs (`git-push`, in git's exec path) are its
        // subcommands: `git push`.
        for c in &parts.commands {
            if let Some(sub) = c.first().and_then(|w| basename_of(w).strip_prefix("git-")) {
                let mut line = format!("git {sub}");
                for w in &c[1..] {
                    line.push(' ');
                    line.push_str(w);
                }
                by_name.push(line);
            }
        }
        let bash_rules = |list: &[PermissionRule]| -> Vec<PermissionRule> {
            list.iter().filter(|r| r.names(tool)).cloned().collect()
        };
        let (deny, ask, allow) = (
            bash_rules(&self.deny),
            bash_rules(&self.ask),
            bash_rules(&self.allow),
        );
        let all_lines: Vec<&String> = lines.iter().chain(by_name.iter()).collect();
        for (list, permission) in [(&deny, Permission::Deny), (&ask, Permission::Ask)] {
            for line in &all_lines {
                if let Some(rule) = list.iter().find(|r| r.matches_command(line)) {
                    return PermissionDecision::by(permission, rule, Some((*line).clone()));
                }
            }
            // A bare `Bash` rule names every command, even an empty one.
            if let Some(rule) = list.iter().find(|r| r.specifier.is_none()) {
                return PermissionDecision::by(permission, rule, None);
            }
        }
        // A word known only when it runs (`git $sub`) might make a deny or
        // ask rule match: ask.
        for (words, unknown) in parts.commands.iter().zip(&parts.unknown_from) {
            let Some(k) = *unknown else { continue };
            let mut known = words[..k].join(" ");
            if let Some(name) = known.split(' ').next().filter(|n| n.contains('/')) {
                known = format!("{}{}", basename_of(name), &known[name.len()..]);
            }
            if k > 0 {
                known.push(' ');
            }
            if let Some(rule) = deny
                .iter()
                .chain(ask.iter())
                .find(|r| r.might_match_from(&known))
            {
                return PermissionDecision {
                    permission: Permission::Ask,
                    rule: None,
                    subject: Some(format!(
                        "{} (a word known only when it runs might match {})",
                        words.join(" "),
                        rule.text
                    )),
                };
            }
        }
        // A rule naming a program and its subcommand (`git push`) also
        // meets the program with options in between (`git -C . push`,
        // `kubectl -n prod delete`, `docker container run`): when the
        // rule's later words appear in order after the program, ask.
        for words in &parts.commands {
            let Some(program) = words.first().map(|w| basename_of(w)) else {
                continue;
            };
            let rest = &words[1..];
            if let Some(rule) = deny.iter().chain(ask.iter()).find(|r| {
                let Some(Specifier::Prefix(p)) = &r.specifier else {
                    return false;
                };
                let mut rule_words = p.split(' ');
                if rule_words.next() != Some(program) {
                    return false;
                }
                let wanted: Vec<&str> = rule_words.collect();
                !wanted.is_empty() && is_subsequence(&wanted, rest)
            }) {
                return PermissionDecision {
                    permission: Permission::Ask,
                    rule: None,
                    subject: Some(format!(
                        "{} (its options may hide what {} names)",
                        words.join(" "),
                        rule.text
                    )),
                };
            }
        }
        // A program we do not know may run a later word as a command
        // (`setpriv rm v`, `npx rm v`, `gdb -ex 'shell rm v'`): when such a
        // word starts something a deny or ask rule names, ask.
        let guarded: Vec<&PermissionRule> = deny.iter().chain(ask.iter()).collect();
        if !guarded.is_empty() {
            for words in &parts.commands {
                if let Some((rule, line)) = runnable_suffix_match(words, &guarded, 0) {
                    return PermissionDecision {
                        permission: Permission::Ask,
                        rule: None,
                        subject: Some(format!(
                            "{} (it may run `{line}`, which {} names)",
                            words.join(" "),
                            rule.text
                        )),
                    };
                }
            }
        }
        if (!deny.is_empty() || !ask.is_empty()) && parts.opaque {
            // A part we cannot see might be a denied one.
            return PermissionDecision {
                permission: Permission::Ask,
                rule: None,
                subject: Some("a part of the command that cannot be read before it runs".into()),
            };
        }
        if allow.is_empty() {
            return default;
        }
        // Only a plain command (literal words, simple quoting, no expansion,
        // no assignment) can be allowed by a rule.
        if parts.opaque || !parts.plain || lines.is_empty() {
            return PermissionDecision {
                permission: Permission::Ask,
                rule: None,
                subject: Some(command.to_string()),
            };
        }
        let mut first_rule = None;
        for words in &parts.commands {
            let line = words.join(" ");
            // Judged on the words too: `'ls /evil'` (one word, a program
            // path holding a blank) joins to the same line as `ls /evil`.
            match allow
                .iter()
                .find(|r| r.matches_command(&line) && r.matches_words(words))
            {
                Some(rule) => {
                    first_rule.get_or_insert(rule);
                }
                None => {
                    return PermissionDecision {
                        permission: Permission::Ask,
                        rule: None,
                        subject: Some(line),
                    };
                }
            }
        }
        match first_rule {
            Some(rule) => PermissionDecision::by(Permission::Allow, rule, None),
            None => default,
        }
    }
}

/// A question for a person: may this call run?
#[derive(Debug, Clone)]
pub struct PermissionRequest {
    /// The tool.
    pub tool: String,
    /// What the tool declares about its arguments.
    pub shape: ToolShape,
    /// Its validated arguments.
    pub args: Value,
    /// Why it asks.
    pub decision: PermissionDecision,
}

impl PermissionRequest {
    /// The question in one line: `Allow bash git push? (rule Bash(git push:*))`.
    pub fn question(&self) -> String {
        let declared = self
            .shape
            .command
            .iter()
            .chain(self.shape.paths.iter().map(|p| &p.name))
            .find_map(|name| self.args.get(name).and_then(Value::as_str));
        let what = match declared {
            Some(text) => text.to_string(),
            None => self.args.to_string(),
        };
        let why = match (&self.decision.rule, &self.decision.subject) {
            (Some(rule), _) => format!("rule {rule}"),
            (None, Some(subject)) => format!("no allow rule covers {subject}"),
            (None, None) => "no allow rule covers it".to_string(),
        };
        // Control characters shown, not obeyed: a command padded with
        // newlines must not push its real content off the screen.
        let what: String = what
            .chars()
            .map(|c| {
                if c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
                    c.escape_default().collect()
                } else {
                    c.to_string()
                }
            })
            .collect();
        format!("Allow {} {what}? ({why})", self.tool)
    }
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// Run this call.
    Yes,
    /// Refuse it.
    No,
    /// Run it, and the same call again without asking for the rest of the session.
    Always,
}

/// Asks a person whether a call may run (a terminal prompt, an editor's
/// dialog, an RPC client). Without one, calls that need approval are refused.
pub trait PermissionPrompt: Send + Sync {
    /// The answer for `request`.
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer>;
}

/// Rules plus the way to ask and what was already approved: what the
/// session's hook, the MCP server and `coding-agent tool` consult.
#[derive(Clone)]
pub struct PermissionGate {
    rules: Arc<PermissionRules>,
    prompt: Option<Arc<dyn PermissionPrompt>>,
    approved: Arc<Mutex<Vec<(String, String)>>>,
    cwd: PathBuf,
    /// Words used when refusing an ask for want of a prompt.
    no_prompt_reason: String,
    /// What the tools declare; without it every tool declares nothing,
    /// so rules with specifiers ask instead of allowing.
    tools: Option<agent_tool::ToolLookup>,
}

impl std::fmt::Debug for PermissionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionGate")
            .field("rules", &self.rules)
            .field("prompt", &self.prompt.is_some())
            .finish()
    }
}

/// What the gate made of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOutcome {
    /// Whether the call may run.
    pub allowed: bool,
    /// The refusal's text for the model, when refused.
    pub reason: Option<String>,
    /// The record for the event stream (`None` when no rule exists, so a
    /// session without permissions sends nothing new).
    pub record: Option<Value>,
}

impl PermissionGate {
    /// A gate over `rules`; asks go to `prompt`, or are refused without one
    /// (`mode` names the mode in that refusal, e.g. "print mode").
    pub fn new(
        rules: PermissionRules,
        prompt: Option<Arc<dyn PermissionPrompt>>,
        cwd: impl Into<PathBuf>,
        mode: &str,
    ) -> Self {
        PermissionGate {
            rules: Arc::new(rules),
            prompt,
            approved: Arc::default(),
            cwd: cwd.into(),
            no_prompt_reason: format!("no one can approve it in {mode}"),
            tools: None,
        }
    }

    /// The same gate learning what each tool declares (its path and
    /// command arguments) from `tools`, so `Read`, `Edit` and `Bash` rules
    /// cover every tool that declares such arguments. A session hands its
    /// registry here.
    pub fn with_tools(mut self, tools: agent_tool::ToolLookup) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Whether there is any rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Decides, asking the prompt when a rule says ask.
    pub async fn check(&self, tool: &str, args: &Value) -> GateOutcome {
        if self.rules.is_empty() {
            return GateOutcome {
                allowed: true,
                reason: None,
                record: None,
            };
        }
        let shape = match &self.tools {
            Some(lookup) => {
                lookup(tool).map_or_else(|| ToolShape::named(tool), |d| ToolShape::of(&d))
            }
            None => ToolShape::named(tool),
        };
        let decision = self.rules.decide(&shape, args, &self.cwd);
        let rule_text = decision
            .rule
            .clone()
            .unwrap_or_else(|| "no allow rule matches".to_string());
        match decision.permission {
            Permission::Allow => GateOutcome {
                allowed: true,
                reason: None,
                record: Some(decision.to_json("rules")),
            },
            Permission::Deny => GateOutcome {
                allowed: false,
                reason: Some(format!(
                    "Permission denied by rule {rule_text}{}",
                    decision
                        .subject
                        .as_deref()
                        .map(|s| format!(" (matched: {s})"))
                        .unwrap_or_default()
                )),
                record: Some(decision.to_json("rules")),
            },
            Permission::Ask => {
                let key = (tool.to_string(), args.to_string());
                if self
                    .approved
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(&key)
                {
                    let mut record = decision.to_json("session");
                    record["permission"] = json!("allow");
                    return GateOutcome {
                        allowed: true,
                        reason: None,
                        record: Some(record),
                    };
                }
                let why = match &decision.rule {
                    Some(rule) => format!("rule {rule}"),
                    None => format!(
                        "no allow rule covers {}",
                        decision.subject.as_deref().unwrap_or("this call")
                    ),
                };
                let Some(prompt) = &self.prompt else {
                    return GateOutcome {
                        allowed: false,
                        reason: Some(format!(
                            "Permission required ({why}) and {}",
                            self.no_prompt_reason
                        )),
                        record: Some(decision.to_json("rules")),
                    };
                };
                let answer = prompt
                    .ask(PermissionRequest {
                        tool: tool.to_string(),
                        shape: shape.clone(),
                        args: args.clone(),
                        decision: decision.clone(),
                    })
                    .await;
                let mut record = decision.to_json("prompt");
                record["answer"] = json!(match answer {
                    PermissionAnswer::Yes => "yes",
                    PermissionAnswer::No => "no",
                    PermissionAnswer::Always => "always",
                });
                match answer {
                    PermissionAnswer::No => GateOutcome {
                        allowed: false,
                        reason: Some(format!("Permission refused by the user ({why})")),
                        record: Some(record),
                    },
                    PermissionAnswer::Always => {
                        self.approved
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(key);
                        GateOutcome {
                            allowed: true,
                            reason: None,
                            record: Some(record),
                        }
                    }
                    PermissionAnswer::Yes => GateOutcome {
                        allowed: true,
                        reason: None,
                        record: Some(record),
                    },
                }
            }
        }
    }

    /// The gate as a `before_tool_call` hook: refusals become blocked calls
    /// with the rule in their text, decisions go to the event stream.
    pub fn hook(&self) -> agent_core::BeforeToolCallHook {
        let gate = self.clone();
        Arc::new(
            move |ctx: agent_core::BeforeToolCallContext, cancel: agent_core::CancellationToken| {
                let gate = gate.clone();
                Box::pin(async move {
                    // A cancelled run does not wait for an answer.
                    let check = std::pin::pin!(gate.check(&ctx.tool_call.name, &ctx.args));
                    let cancelled = std::pin::pin!(cancel.cancelled());
                    let outcome = match futures::future::select(check, cancelled).await {
                        futures::future::Either::Left((outcome, _)) => outcome,
                        futures::future::Either::Right(_) => {
                            return Ok(Some(agent_core::BeforeToolCallResult::block(
                                "Operation aborted",
                            )));
                        }
                    };
                    if outcome.record.is_none() && outcome.allowed {
                        return Ok(None);
                    }
                    Ok(Some(agent_core::BeforeToolCallResult {
                        block: !outcome.allowed,
                        reason: outcome.reason,
                        decision: outcome.record,
                        ..Default::default()
                    }))
                })
            },
        )
    }
}

/// The shapes the built-in tools declare, for tests of the rules.
#[cfg(test)]
pub(crate) fn shape(name: &str) -> ToolShape {
    use agent_tool::PathArgument;
    let shape = ToolShape::named(name);
    match name {
        "bash" => shape.with_command("command"),
        "read" | "grep" | "find" | "ls" => shape.with_path(PathArgument::read("path")),
        "edit" | "write" => shape.with_path(PathArgument::write("path")),
        _ => shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
        PermissionRules::from_lists(allow, ask, deny, Path::new("/w")).unwrap()
    }

    fn bash(r: &PermissionRules, command: &str) -> Permission {
        r.decide(
            &shape("bash"),
            &json!({"command": command}),
            Path::new("/w"),
        )
        .permission
    }

    /// A word holding a blank cannot pass for two words of a rule: the
    /// eighth review ran a repository's `ls /evil` under `Bash(ls:*)`.
    #[test]
    fn a_program_name_holding_a_blank_is_never_allowed() {
        let r = rules(
            &[
                "Bash(ls:*)",
                "Bash(cat:*)",
                "Bash(git status)",
                "Bash(npm run *)",
            ],
            &[],
            &["Bash(rm:*)"],
        );
        for command in [
            "'ls /evil'",
            "ls\\ /evil",
            "\"cat /touch\" touched",
            "'cat /cp' .env leaked.txt",
            "'git status'",
            "git 'status'x",
            "'npm run' test",
            "npm 'run test'",
        ] {
            assert_eq!(bash(&r, command), Permission::Ask, "{command}");
        }
        // Blanks inside arguments stay fine.
        for command in [
            "ls 'my dir'",
            "cat \"a b.txt\"",
            "git status",
            "npm run test",
        ] {
            assert_eq!(bash(&r, command), Permission::Allow, "{command}");
        }
    }

    #[test]
    fn precedence_deny_ask_allow_default() {
        use Permission::*;
        // (allow, ask, deny, command, expected)
        type Row<'a> = (
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            &'a str,
            Permission,
        );
        let table: [Row<'_>; 9] = [
            (&[], &[], &[], "anything", Allow),
            (&["Bash(git:*)"], &[], &[], "git status", Allow),
            (&["Bash(git:*)"], &[], &[], "make", Ask),
            (
                &["Bash(git:*)"],
                &["Bash(git push:*)"],
                &[],
                "git push origin",
                Ask,
            ),
            (
                &["Bash(git:*)"],
                &["Bash(git push:*)"],
                &["Bash(git push --force:*)"],
                "git push --force",
                Deny,
            ),
            (&["Bash"], &[], &["Bash(rm:*)"], "rm x", Deny),
            (&["Bash(npm run test)"], &[], &[], "npm run test", Allow),
            (
                &["Bash(npm run test)"],
                &[],
                &[],
                "npm run test -- --watch",
                Ask,
            ),
            (&["Bash(npm run *)"], &[], &[], "npm run build", Allow),
        ];
        for (allow, ask, deny, command, expected) in table {
            assert_eq!(
                bash(&rules(allow, ask, deny), command),
                expected,
                "{allow:?} {ask:?} {deny:?} {command}"
            );
        }
    }

    #[test]
    fn compound_commands_never_pass_as_their_first_part() {
        let r = rules(&["Bash(git diff:*)", "Bash(echo:*)"], &[], &["Bash(rm:*)"]);
        assert_eq!(bash(&r, "git diff HEAD~1"), Permission::Allow);
        let attempts = [
            "git diff; rm -rf ~",
            "git diff && rm x",
            "git diff || rm x",
            "git diff | rm x",
            "git diff & rm x",
            "git diff\nrm x",
            "git diff $(rm x)",
            "git diff `rm x`",
            "git diff \"$(rm x)\"",
            "(rm x)",
            "{ rm x; }",
            "bash -c 'rm x'",
            "sh -c \"git diff; rm x\"",
            "FOO=1 rm x",
            "env rm x",
            "/bin/rm x",
            "\\rm x",
            "r\"m\" x",
            "$'\\x72m' x",
            "command rm x",
            "xargs rm < list",
            "find . -exec rm {} \\;",
            "git diff > >(rm x)",
            "eval \"rm x\"",
            "X=rm; $X x",
            "if true; then rm x; fi",
            "git diff <<< $(rm x)",
            "timeout 5 rm x",
            "sudo -u root rm x",
            "nohup rm x &",
            "git diff --output=$(rm x)",
            "echo ok; cat <<EOF\nrm x\nEOF",
        ];
        for attempt in attempts {
            let got = bash(&r, attempt);
            assert_ne!(got, Permission::Allow, "{attempt:?} passed");
        }
    }

    #[test]
    fn path_rules_and_names() {
        let r = rules(
            &["Edit(src/**)"],
            &[],
            &["Read(./secrets/**)", "Grep", "mcp__tracker__delete"],
        );
        let d = |tool: &str, args: Value| r.decide(&shape(tool), &args, Path::new("/w")).permission;
        assert_eq!(
            d("read", json!({"path": "secrets/key.txt"})),
            Permission::Deny
        );
        assert_eq!(
            d("read", json!({"path": "../w/secrets/a"})),
            Permission::Deny
        );
        assert_eq!(d("ls", json!({"path": "secrets/x"})), Permission::Deny);
        assert_eq!(d("read", json!({"path": "src/a.rs"})), Permission::Allow);
        assert_eq!(d("edit", json!({"path": "src/a.rs"})), Permission::Allow);
        assert_eq!(
            d("write", json!({"path": "src/deep/b.rs"})),
            Permission::Allow
        );
        assert_eq!(d("write", json!({"path": "README.md"})), Permission::Ask);
        assert_eq!(d("grep", json!({"pattern": "x"})), Permission::Deny);
        assert_eq!(d("mcp__tracker__delete", json!({})), Permission::Deny);
        assert_eq!(d("mcp__tracker__list", json!({})), Permission::Allow);
        let r = rules(&[], &["mcp__tracker"], &[]);
        assert_eq!(
            r.decide(&shape("mcp__tracker__list"), &json!({}), Path::new("/w"))
                .permission,
            Permission::Ask
        );
    }

    #[test]
    fn a_project_adds_deny_and_ask_only() {
        let settings = Settings::merged(
            json!({"permissions": {"allow": ["Bash(git:*)"]}}),
            json!({"permissions": {"allow": ["Bash"], "deny": ["Bash(git push:*)"]}}),
        );
        let r = PermissionRules::from_settings(&settings, Path::new("/w")).unwrap();
        assert_eq!(bash(&r, "git status"), Permission::Allow);
        assert_eq!(bash(&r, "curl evil"), Permission::Ask);
        assert_eq!(bash(&r, "git push"), Permission::Deny);
        let bad = Settings::merged(json!({"permissions": {"deny": ["Bash(rm:*"]}}), json!({}));
        assert!(PermissionRules::from_settings(&bad, Path::new("/w")).is_err());
    }
}
