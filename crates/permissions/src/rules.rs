//! [`PermissionRules`]: the allow, ask and deny lists, and the decision for
//! one call.

use std::path::Path;

use serde_json::Value;

use super::config::{PermissionConfig, PermissionConfigError, parse_list};
use super::rule::{PermissionRule, Specifier, basename_of, is_subsequence, runnable_suffix_match};
use super::shell::split_commands;
use super::{Permission, PermissionDecision, ToolShape};

/// Allow, ask and deny rules for one working directory.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    pub(super) allow: Vec<PermissionRule>,
    pub(super) ask: Vec<PermissionRule>,
    pub(super) deny: Vec<PermissionRule>,
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
        Ok(PermissionRules {
            allow: parse_list("allow", allow, cwd)?,
            ask: parse_list("ask", ask, cwd)?,
            deny: parse_list("deny", deny, cwd)?,
        })
    }

    /// The rules of one configuration; path globs are anchored at `cwd`.
    ///
    /// # Errors
    /// The first rule that does not parse.
    pub fn from_config(
        config: &PermissionConfig,
        cwd: &Path,
    ) -> Result<Self, PermissionConfigError> {
        Ok(PermissionRules {
            allow: parse_list("allow", &config.allow, cwd)?,
            ask: parse_list("ask", &config.ask, cwd)?,
            deny: parse_list("deny", &config.deny, cwd)?,
        })
    }

    /// The user's rules plus a project's deny and ask rules. The project's
    /// allow rules are ignored (with a warning): a cloned repository must
    /// not allow itself `Bash(*)`.
    ///
    /// ```
    /// use agent_permissions::{Permission, PermissionConfig, PermissionRules, ToolShape};
    /// let user = PermissionConfig { allow: vec!["Bash(git:*)".into()], ..Default::default() };
    /// let project = PermissionConfig {
    ///     allow: vec!["Bash".into()],
    ///     deny: vec!["Bash(git push:*)".into()],
    ///     ..Default::default()
    /// };
    /// let rules = PermissionRules::layered(&user, &project, "/w".as_ref()).unwrap();
    /// let bash = ToolShape::named("bash").with_command("command");
    /// let decide = |c: &str| {
    ///     rules.decide(&bash, &serde_json::json!({ "command": c }), "/w".as_ref()).permission
    /// };
    /// assert_eq!(decide("git status"), Permission::Allow);
    /// assert_eq!(decide("git push"), Permission::Deny);
    /// assert_eq!(decide("curl example.com"), Permission::Ask);
    /// ```
    ///
    /// # Errors
    /// The first rule of either that does not parse.
    pub fn layered(
        user: &PermissionConfig,
        project: &PermissionConfig,
        cwd: &Path,
    ) -> Result<Self, PermissionConfigError> {
        if !project.allow.is_empty() {
            tracing::warn!(
                "the project's permissions.allow rules are ignored: a project may only add ask and deny rules"
            );
        }
        let mut rules = Self::from_config(user, cwd)?;
        rules.ask.extend(parse_list("ask", &project.ask, cwd)?);
        rules.deny.extend(parse_list("deny", &project.deny, cwd)?);
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
        if let Some(decision) = super::paths::decide(self, tool, args, cwd, &default) {
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
        // Another program that deletes files as `rm` does (`unlink v`,
        // `find -delete`, `git clean`): while a rule guards `rm`, ask.
        for words in &parts.commands {
            // From any later word too, unless the program leaves its
            // arguments alone: `setpriv unlink v`, `npx unlink v`.
            let program = words.first().map(|w| basename_of(w)).unwrap_or("");
            let starts = if super::shell::leaves_arguments_alone(program) {
                1
            } else {
                words.len()
            };
            if let Some(why) =
                (0..starts).find_map(|j| super::deleters::deletes_like_rm(&words[j..]))
                && let Some(rule) = deny
                    .iter()
                    .chain(ask.iter())
                    .find(|r| r.might_match_from("rm "))
            {
                return PermissionDecision {
                    permission: Permission::Ask,
                    rule: None,
                    subject: Some(format!(
                        "{} ({why}, as {} guards)",
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
        // no assignment) can be allowed by a rule, and only one written in
        // characters whose meaning to bash the splitter cannot get wrong:
        // a second line of defence should the model of bash miss a case.
        let chars: Vec<char> = command.chars().collect();
        let refused = chars.iter().enumerate().find(|&(i, &c)| {
            // `$'...'` (ANSI-C quoting, decoded by the splitter) is the one
            // `$` an allow rule passes.
            !(allowable_char(c) || (c == '$' && chars.get(i + 1) == Some(&'\'')))
        });
        if let Some((_, c)) = refused {
            return PermissionDecision {
                permission: Permission::Ask,
                rule: None,
                subject: Some(format!(
                    "{command} (an allow rule never passes the character {c:?})"
                )),
            };
        }
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

/// Characters a command may hold and still be allowed by an allow rule:
/// letters and digits (any script), space, tab and newline, the quotes,
/// the separators `;`, `|`, `&`, redirection arrows, and punctuation bash
/// gives no meaning in a word (`-_./=:,@+%`), plus `~` and the glob
/// characters `*` and `?` (judged by the splitter). Everything with a
/// meaning the splitter would have to model (`$` other than in `$'...'`,
/// backticks, braces, brackets, parentheses, `#`, `!`, a backslash, `^`)
/// or that bash does not take for
/// a blank although it looks like one (`\r`, a no-break space) asks.
///
/// ```
/// # use agent_permissions::{Permission, PermissionRules, ToolShape};
/// # use serde_json::json;
/// let rules = PermissionRules::from_lists(&["Bash(echo:*)"], &[], &[], "/w".as_ref()).unwrap();
/// let bash = ToolShape::named("bash").with_command("command");
/// let decide = |c: &str| rules.decide(&bash, &json!({ "command": c }), "/w".as_ref()).permission;
/// assert_eq!(decide("echo hello, world: 1+1=2 > /dev/null"), Permission::Allow);
/// assert_eq!(decide("echo {a,b}"), Permission::Ask);
/// assert_eq!(decide("echo a\rb"), Permission::Ask);
/// ```
fn allowable_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            ' ' | '\t'
                | '\n'
                | '\''
                | '"'
                | ';'
                | '|'
                | '&'
                | '<'
                | '>'
                | '-'
                | '_'
                | '.'
                | '/'
                | '='
                | ':'
                | ','
                | '@'
                | '+'
                | '%'
                | '*'
                | '?'
                | '~'
        )
}
