//! # agent-permissions
//!
//! Permission rules: which tool calls run, which need a person's approval,
//! which are refused. This crate knows tools only by what they declare
//! (agent-tool's `ToolDefinition`) and the loop only by its
//! `before_tool_call` hook (agent-core); it knows nothing of settings
//! files, sessions or front ends: it takes a typed [`PermissionConfig`],
//! and whoever asks a person implements [`PermissionPrompt`].
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use agent_permissions::{PermissionConfig, PermissionGate, PermissionRules};
//! use serde_json::json;
//!
//! // The `permissions` section of a settings file.
//! let config: PermissionConfig = serde_json::from_value(json!({
//!     "allow": ["Bash(git diff:*)"],
//!     "deny": ["Bash(rm:*)"]
//! }))
//! .unwrap();
//! let cwd = std::env::temp_dir();
//! let rules = PermissionRules::from_config(&config, &cwd).unwrap();
//! // A tool that declares its `command` argument a shell command line:
//! // `Bash` rules judge it by that argument (a session hands the gate its
//! // registry; here one definition).
//! let shell = agent_tool::tool("shell")
//!     .command_argument("command")
//!     .execute(|_: serde_json::Value, _| async { Ok(agent_tool::AgentToolResult::text("")) });
//! // No prompt: what would be asked is refused "in this example".
//! let gate = PermissionGate::new(rules, None, &cwd, "this example")
//!     .with_tools(std::sync::Arc::new(move |name: &str| {
//!         (name == "shell").then(|| shell.clone())
//!     }));
//! let bash = |command: &str| json!({ "command": command });
//! assert!(gate.check("shell", &bash("git diff HEAD~1")).await.allowed);
//! let refused = gate.check("shell", &bash("git diff && rm -rf ~")).await;
//! assert!(!refused.allowed);
//! assert!(refused.reason.unwrap().contains("Bash(rm:*)"));
//! # });
//! ```
//!
//! Where each concern lives: `config.rs` ([`PermissionConfig`], the
//! settings section), `rule.rs` (one rule of the grammar), `rules.rs` (the
//! lists and the decision for one call), `shape.rs` (what a tool
//! declares), `paths.rs` (path rules on the file opened), `gate.rs` (rules
//! plus a person), `shell/` (the model of bash: `lexer.rs`, `quotes.rs`,
//! `knowledge.rs`, `judge.rs`), `deleters.rs` (programs that delete as
//! `rm` does), `continuation.rs` (line continuations).
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

mod config;
mod continuation;
mod deleters;
mod gate;
mod paths;
mod rule;
mod rules;
mod shape;
mod shell;

use serde_json::{Value, json};

pub use agent_tool::path_filter::PathRuleFilter;
pub use config::{PermissionConfig, PermissionConfigError};
pub use continuation::join_continued_lines;
pub use gate::{
    GateOutcome, PermissionAnswer, PermissionGate, PermissionPrompt, PermissionRequest,
};
pub use rule::{PermissionRule, RuleError};
pub use rules::PermissionRules;
pub use shape::ToolShape;
#[cfg(test)]
pub(crate) use shape::shape;
pub use shell::{ShellCommands, split_commands};

use rule::PermissionRule as Rule;

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
    pub(crate) fn by(permission: Permission, rule: &Rule, subject: Option<String>) -> Self {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

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
        let config = |v: Value| PermissionConfig::from_value(&v).unwrap();
        let user = config(json!({"allow": ["Bash(git:*)"]}));
        let project = config(json!({"allow": ["Bash"], "deny": ["Bash(git push:*)"]}));
        let r = PermissionRules::layered(&user, &project, Path::new("/w")).unwrap();
        assert_eq!(bash(&r, "git status"), Permission::Allow);
        assert_eq!(bash(&r, "curl evil"), Permission::Ask);
        assert_eq!(bash(&r, "git push"), Permission::Deny);
        let bad = config(json!({"deny": ["Bash(rm:*"]}));
        assert!(PermissionRules::layered(&bad, &user, Path::new("/w")).is_err());
        assert!(PermissionRules::layered(&user, &bad, Path::new("/w")).is_err());
    }
}
