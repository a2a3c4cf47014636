//! [`PermissionGate`]: rules plus a way to ask a person, as the
//! `before_tool_call` hook of a session, the MCP server and `coding-agent
//! tool`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Permission, PermissionDecision, PermissionRules, ToolShape};

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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermissionAnswer {
    /// Run this call.
    Yes,
    /// Refuse it.
    No,
    /// Run it, and the same call again without asking for the rest of the session.
    Always,
    /// Refuse it, and tell the model why (the text goes into the refused
    /// call's result, after the refusal).
    NoBecause(String),
}

/// Asks a person whether a call may run (a terminal prompt, an editor's
/// dialog, an RPC client). Without one, calls that need approval are refused.
pub trait PermissionPrompt: Send + Sync {
    /// The answer for `request`.
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer>;
}

/// Rules plus the way to ask and what was already approved: what the
/// session's hook, the MCP server and `coding-agent tool` consult. Give one
/// to coding-agent's `AgentSessionBuilder::permissions` to protect files:
/// unlike a `decorate(...).before(...)` check on the arguments, path rules
/// judge the file a path leads to.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use agent_permissions::{PermissionGate, PermissionRules};
/// let cwd = std::env::temp_dir();
/// let rules = PermissionRules::from_lists(&[], &[], &["Bash(rm -rf *)"], &cwd).unwrap();
/// // No prompt: an `ask` rule would be refused "in this program".
/// let gate = PermissionGate::new(rules, None, &cwd, "this program");
/// let refused = gate.check("bash", &serde_json::json!({"command": "rm -rf /"})).await;
/// assert!(!refused.allowed);
/// // A tool no rule names runs. (A session hands the gate its tools, so
/// // that rules with specifiers know which argument is a command or a
/// // path: `PermissionGate::with_tools`.)
/// let other = gate.check("read", &serde_json::json!({"path": "README.md"})).await;
/// assert!(other.allowed);
/// # });
/// ```
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
    /// A gate over `rules`, relative to `cwd`; an `ask` goes to `prompt`.
    ///
    /// `no_prompt_label` is only words: where the run happens, for the
    /// refusal an `ask` gets when there is no prompt ("no one can approve
    /// it in {no_prompt_label}", e.g. `"print mode"`). It grants and
    /// refuses nothing.
    pub fn new(
        rules: PermissionRules,
        prompt: Option<Arc<dyn PermissionPrompt>>,
        cwd: impl Into<PathBuf>,
        no_prompt_label: &str,
    ) -> Self {
        PermissionGate {
            rules: Arc::new(rules),
            prompt,
            approved: Arc::default(),
            cwd: cwd.into(),
            no_prompt_reason: format!("no one can approve it in {no_prompt_label}"),
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

    /// The same gate with asks going to `prompt`.
    pub fn with_prompt(mut self, prompt: Arc<dyn PermissionPrompt>) -> Self {
        self.prompt = Some(prompt);
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
                record["answer"] = json!(match &answer {
                    PermissionAnswer::Yes => "yes",
                    PermissionAnswer::No | PermissionAnswer::NoBecause(_) => "no",
                    PermissionAnswer::Always => "always",
                });
                match answer {
                    PermissionAnswer::No => GateOutcome {
                        allowed: false,
                        reason: Some(format!("Permission refused by the user ({why})")),
                        record: Some(record),
                    },
                    PermissionAnswer::NoBecause(because) => {
                        // The person's words, as they typed them: only
                        // the model reads this text.
                        record["reason"] = json!(because);
                        GateOutcome {
                            allowed: false,
                            reason: Some(format!(
                                "Permission refused by the user ({why}). The user says: {because}"
                            )),
                            record: Some(record),
                        }
                    }
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
