//! The `codemode` tool: the model writes JavaScript whose `tools.<name>()`
//! calls are real tool calls of the run.
//!
//! Each inner call goes through [`NestedToolCalls`]: the loop's own lookup,
//! validation, `before_tool_call` hook (where a session's permission rules
//! and extension hooks run) and `after_tool_call` hook, so a rule that
//! blocks `bash` blocks it inside a script too. Only the script's output
//! reaches the model.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    AgentTool, AgentToolResult, BoxFuture, NestedOutcome, NestedToolCalls, ToolCallContext,
    ToolError, ToolMeta,
};
use agent_tool::ContentBlock;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};

use crate::host::ScriptHost;
use crate::output::{DEFAULT_MAX_OUTPUT_TOKENS, Ending, render};
use crate::protocol::{ScriptEnd, ScriptRequest, ScriptTool, VmEvent, VmLimits};
use crate::sandbox::{SandboxError, ScriptSandbox, Stop};
use crate::source::{js_identifier, parse_source};
use crate::store::ScriptStore;

/// The tool's name.
pub const CODEMODE_TOOL_NAME: &str = "codemode";
/// The deadline of a script that sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

const DESCRIPTION: &str = "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as the body of an async function in a QuickJS sandbox, so top-level `await` and `return` work. There is no Node, file system, network or timers: the script reaches the outside only through tools.
- `await tools.<name>({ ...args })` resolves to the tool's text output (an image block for an image `read`), and rejects with an Error carrying the tool's error text when the call fails or is refused. Use `Promise.allSettled()` to keep the results that succeed. Calls still running when the script ends are cancelled.
- Optional first line: `// @options: {\"max_output_tokens\": 10000, \"timeout_ms\": 60000}`
Globals:
- `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)` and a top-level `return` add output; `exit()` ends the script. With several text items each starts with a `==> text N/M <==` line; `console` lines follow in one `<console_output>` block.
- `store(key, value)` and `load(key)` keep small JSON values across codemode calls.
- `ALL_TOOLS` lists the callable tools; `await describeTool(name)` gives one's description and parameters.";

/// Runs scripts; see the [crate docs](crate).
pub struct CodemodeTool {
    meta: ToolMeta,
    sandbox: Arc<dyn ScriptSandbox>,
    store: Option<Arc<dyn ScriptStore>>,
    timeout: Option<Duration>,
    limits: VmLimits,
}

impl std::fmt::Debug for CodemodeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodemodeTool")
            .field("sandbox", &self.sandbox)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl CodemodeTool {
    /// The tool, running scripts in `sandbox`, with a 600 s deadline and no
    /// store (values stored by a script last for that script only).
    pub fn new(sandbox: impl ScriptSandbox + 'static) -> CodemodeTool {
        CodemodeTool::with_sandbox(Arc::new(sandbox))
    }

    /// [`CodemodeTool::new`] with a shared sandbox.
    pub fn with_sandbox(sandbox: Arc<dyn ScriptSandbox>) -> CodemodeTool {
        CodemodeTool {
            meta: ToolMeta::new(CODEMODE_TOOL_NAME, DESCRIPTION)
                .with_label(CODEMODE_TOOL_NAME)
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "description": "Raw JavaScript source."}
                    },
                    "required": ["code"],
                    "additionalProperties": false
                })),
            sandbox,
            store: None,
            timeout: Some(DEFAULT_TIMEOUT),
            limits: VmLimits::default(),
        }
    }

    /// The same tool with this deadline for scripts that set none (`None`:
    /// no deadline).
    pub fn timeout(mut self, timeout: Option<Duration>) -> CodemodeTool {
        self.timeout = timeout;
        self
    }

    /// The same tool keeping `store()` values in `store`.
    pub fn store(mut self, store: Arc<dyn ScriptStore>) -> CodemodeTool {
        self.store = Some(store);
        self
    }

    /// The same tool with these VM limits.
    pub fn limits(mut self, limits: VmLimits) -> CodemodeTool {
        self.limits = limits;
        self
    }

    /// The same tool whose description names how scripts call `tools`
    /// (one line each), so the model need not look them up.
    pub fn describing<'a>(mut self, tools: impl IntoIterator<Item = &'a str>) -> CodemodeTool {
        let lines: Vec<String> = tools
            .into_iter()
            .filter(|name| *name != CODEMODE_TOOL_NAME)
            .map(|name| {
                format!(
                    "- `tools.{}(args)`: the `{name}` tool's arguments",
                    js_identifier(name)
                )
            })
            .collect();
        if !lines.is_empty() {
            self.meta.description = format!("{DESCRIPTION}\nCallable tools:\n{}", lines.join("\n"));
        }
        self
    }
}

impl CodemodeTool {
    /// The tool as a session registers it: its prompt line and guideline,
    /// inactive until chosen (`--tools +codemode`), and read-only itself
    /// (what it does is its inner calls, each gated on its own).
    pub fn definition(self) -> agent_tool::ToolDefinition {
        agent_tool::ToolDefinition::new(Arc::new(self))
            .with_prompt_snippet("Run JavaScript that calls other tools")
            .with_guideline(
                "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter large output, instead of many separate calls.",
            )
            .with_active_by_default(false)
            .with_hints(agent_tool::ToolHints::read_only())
            .with_render_call(render_call)
            .with_render_result(render_result)
    }
}

/// Lines of a script shown in its call before the rest is counted.
const CALL_PREVIEW_LINES: usize = 12;

/// The call: the script itself (its nested calls are drawn under it by the
/// front end).
fn render_call(
    args: &Value,
    theme: &agent_tool::Theme,
    _ctx: &agent_tool::RenderContext,
) -> Option<agent_tool::StyledText> {
    let code = args.get("code")?.as_str()?;
    let mut text = agent_tool::StyledText::new();
    text.push(agent_tool::StyledLine::styled("codemode", theme.accent));
    let lines: Vec<&str> = code.lines().collect();
    for line in lines.iter().take(CALL_PREVIEW_LINES) {
        text.push(agent_tool::StyledLine::styled("  ", theme.muted).push(*line, theme.muted));
    }
    if lines.len() > CALL_PREVIEW_LINES {
        text.push(agent_tool::StyledLine::styled(
            format!("  … {} more lines", lines.len() - CALL_PREVIEW_LINES),
            theme.muted,
        ));
    }
    Some(text)
}

/// The result: its text, 20 lines unless expanded (5 while running).
fn render_result(
    result: &AgentToolResult,
    options: &agent_tool::RenderResultOptions,
    theme: &agent_tool::Theme,
    _ctx: &agent_tool::RenderContext,
) -> Option<agent_tool::StyledText> {
    let style = if options.is_error {
        theme.error
    } else {
        agent_tool::anstyle::Style::new()
    };
    let limit = if options.expanded {
        usize::MAX
    } else if options.is_partial {
        5
    } else {
        20
    };
    let content = result.text_content();
    let lines: Vec<&str> = content.lines().collect();
    let mut text = agent_tool::StyledText::new();
    for line in lines.iter().take(limit) {
        text.push(agent_tool::StyledLine::styled(*line, style));
    }
    if lines.len() > limit {
        text.push(agent_tool::StyledLine::styled(
            format!("… {} more lines", lines.len() - limit),
            theme.muted,
        ));
    }
    Some(text)
}

impl AgentTool for CodemodeTool {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        Box::pin(self.run(params, cx))
    }
}

type CallFuture = BoxFuture<'static, (u64, usize, Instant, NestedOutcome)>;

/// Why the host stopped listening to a VM: a frame no honest VM sends.
fn violation(why: String) -> Ending {
    Ending::SandboxFailed(format!("the script's VM broke the protocol: {why}"))
}

impl CodemodeTool {
    async fn run(&self, params: Value, cx: ToolCallContext) -> Result<AgentToolResult, ToolError> {
        let started = Instant::now();
        let code = params
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("codemode needs `code`: the JavaScript to run"))?;
        let source = parse_source(code).map_err(|e| ToolError::new(e.to_string()))?;
        let nested = NestedToolCalls::of(&cx).cloned();
        let tools: Vec<ScriptTool> = nested
            .as_ref()
            .map(|n| {
                n.tools()
                    .iter()
                    .filter(|t| t.name() != CODEMODE_TOOL_NAME)
                    .map(|t| ScriptTool {
                        name: t.name().to_string(),
                        js_name: js_identifier(t.name()),
                        description: format!(
                            "{}\n\nParameters (JSON Schema): {}",
                            t.description().trim(),
                            t.parameters()
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let store: BTreeMap<String, Value> =
            self.store.as_ref().map(|s| s.load()).unwrap_or_default();
        // A script may shorten the deadline, never lengthen the one set here.
        let timeout = match (source.timeout_ms.map(Duration::from_millis), self.timeout) {
            (Some(asked), Some(most)) => Some(asked.min(most)),
            (asked, most) => asked.or(most),
        };
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let max_tokens = source
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let limits = VmLimits {
            timeout_ms: timeout.map(|t| t.as_millis().min(u64::MAX as u128) as u64),
            ..self.limits
        };
        let mut host = ScriptHost::new(
            limits,
            tools.iter().map(|t| t.name.clone()),
            nested.as_ref().map_or(1, NestedToolCalls::max_parallel),
        );
        let request = ScriptRequest {
            code: source.code,
            tools,
            store: store
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            limits,
        };
        if host.update_due(true) {
            cx.updates
                .send(AgentToolResult::default().with_details(host.details()));
        }

        let sleep_until_deadline = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep_until_deadline);

        // The wait for a VM counts toward the deadline.
        let started_run = tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => Err(Ending::NotStarted("Script aborted: Execution aborted".into())),
            _ = &mut sleep_until_deadline => Err(Ending::NotStarted(format!(
                "Script timed out: Execution timed out after {} ms while waiting for a free script worker",
                timeout.unwrap_or_default().as_millis()
            ))),
            started = self.sandbox.start(request) => started.map_err(|e| match e {
                SandboxError::Busy(why) => Ending::NotStarted(why),
                SandboxError::Failed(why) => Ending::SandboxFailed(why),
            }),
        };
        let mut script = match started_run {
            Ok(script) => script,
            Err(ending) => return finish(&host, None, ending, max_tokens, started),
        };

        let calls_cancel = cx.cancel.child_token();
        let mut in_flight: FuturesUnordered<CallFuture> = FuturesUnordered::new();
        let mut returned: Option<String> = None;
        let mut writes = Vec::new();
        let ending = loop {
            // Start what may start, send what may be sent.
            for call in host.startable() {
                let Some(nested) = nested.clone() else { break };
                let cancel = calls_cancel.clone();
                let began = Instant::now();
                in_flight.push(Box::pin(async move {
                    let outcome = nested.call(&call.name, call.args, &cancel).await;
                    (call.id, call.index, began, outcome)
                }));
            }
            for settlement in host.sendable() {
                script.settle(settlement.id, settlement.ok, settlement.payload);
            }
            if host.update_due(false) {
                cx.updates
                    .send(AgentToolResult::default().with_details(host.details()));
            }
            tokio::select! {
                biased;
                _ = cx.cancel.cancelled() => break Ending::Aborted,
                _ = &mut sleep_until_deadline => break Ending::TimedOut(timeout.unwrap_or_default()),
                Some((id, index, began, outcome)) = in_flight.next(), if !in_flight.is_empty() => {
                    host.finished(id, index, began, &outcome, calls_cancel.is_cancelled());
                }
                event = script.events.recv() => match event {
                    Some(VmEvent::Call { id, name, args }) => {
                        if nested.is_none() {
                            // Outside a loop no tool is given, so no honest VM calls one.
                            break violation("a call with no tools given".into());
                        }
                        match host.call(id, name, &args, &cx.call_id) {
                            Ok(Ok(())) => {}
                            Ok(Err(refused)) => {
                                script.settle(refused.id, refused.ok, refused.payload);
                            }
                            Err(why) => break violation(why),
                        }
                    }
                    Some(VmEvent::Took { id }) => host.took(id),
                    Some(VmEvent::Output { kind, data, mime }) => {
                        if let Err(why) = host.output(kind, data, mime) {
                            break violation(why);
                        }
                    }
                    Some(VmEvent::End(end)) => match end {
                        ScriptEnd::Completed { value, writes: w } => {
                            if let Err(why) = host.check_writes(&w, store.len()) {
                                break violation(why);
                            }
                            returned = value;
                            writes = w;
                            break Ending::Completed;
                        }
                        ScriptEnd::Threw { stack, .. } => break Ending::Threw(stack),
                        ScriptEnd::TimedOut => break Ending::TimedOut(timeout.unwrap_or_default()),
                        ScriptEnd::Interrupted => break Ending::Aborted,
                    },
                    None => break Ending::SandboxFailed(String::new()),
                },
            }
        };
        // Calls still running are cut off by the end of the script.
        calls_cancel.cancel();
        let how = match &ending {
            Ending::Completed | Ending::Threw(_) => Stop::Detach,
            // It went away without a word: wait to learn why.
            Ending::SandboxFailed(why) if why.is_empty() => Stop::Wait,
            _ => Stop::Kill,
        };
        let abnormal = script.stop(how).await;
        while let Some((id, index, began, outcome)) = in_flight.next().await {
            host.finished(id, index, began, &outcome, true);
        }
        host.cancel_running();
        let ending = match ending {
            Ending::SandboxFailed(why) if why.is_empty() => Ending::SandboxFailed(
                abnormal.unwrap_or_else(|| "the script's VM ended without a result".to_string()),
            ),
            other => other,
        };
        if ending == Ending::Completed
            && !writes.is_empty()
            && let Some(store) = &self.store
        {
            let mut set = serde_json::Map::new();
            let mut delete = Vec::new();
            for (key, json) in writes {
                match json.and_then(|j| serde_json::from_str::<Value>(&j).ok()) {
                    Some(value) => {
                        set.insert(key, value);
                    }
                    None => delete.push(key),
                }
            }
            store.save(set, delete);
        }
        finish(&host, returned.as_deref(), ending, max_tokens, started)
    }
}

fn finish(
    run: &ScriptHost,
    returned: Option<&str>,
    ending: Ending,
    max_tokens: u64,
    started: Instant,
) -> Result<AgentToolResult, ToolError> {
    let rendered = render(
        &run.outputs,
        returned,
        &ending,
        &run.calls,
        max_tokens,
        started.elapsed(),
    );
    let mut details = run.details();
    if let Some(path) = &rendered.full_output_path {
        details["fullOutputPath"] = json!(path.display().to_string());
    }
    if rendered.failed {
        // A failure is an error result; its text keeps the partial output.
        let text: Vec<&str> = rendered
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        return Err(ToolError::new(text.join("")));
    }
    Ok(AgentToolResult {
        content: rendered.content,
        details,
        ..Default::default()
    })
}
