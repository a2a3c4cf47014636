//! Runs of the loop: scripted models and turns, recording sinks and small
//! tools with observable behaviour.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_ai::providers::scripted::{ScriptedClient, ScriptedTurn};
use agent_ai::{Message, Model};
use agent_core::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentTool, AgentToolResult, CancellationToken,
    EventSink, ExecutionMode, ToolCallContext, ToolError, ToolMeta, ToolUpdateSink, run_agent_loop,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// A scripted client from turn objects.
pub fn scripted(turns: Vec<Value>) -> Arc<ScriptedClient> {
    let turns: Vec<ScriptedTurn> = turns
        .into_iter()
        .map(|t| serde_json::from_value(t).expect("valid scripted turn"))
        .collect();
    Arc::new(ScriptedClient::new(turns).with_request_log())
}

/// One `toolCall` content block of a scripted turn.
pub fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"type":"toolCall","id":id,"name":name,"arguments":args})
}

/// A turn asking for the given `(id, name, args)` calls.
pub fn calls(list: &[(&str, &str, Value)]) -> Value {
    let content: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| tool_call(id, name, args.clone()))
        .collect();
    json!({ "content": content })
}

/// A text-only turn.
pub fn text(t: &str) -> Value {
    json!({"content":[{"type":"text","text":t}]})
}

/// The model the scripted runs name.
pub fn model() -> Model {
    Model::new("scripted", "test-model")
}

/// Collects events.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<AgentEvent>>>);

impl Recorder {
    /// A sink that records into this recorder.
    pub fn sink(&self) -> EventSink {
        let events = self.0.clone();
        Arc::new(move |e: &AgentEvent| events.lock().unwrap().push(e.clone()))
    }
    /// The events so far.
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }
    /// Event types, with message_update left out (their count depends on delta sizes).
    pub fn kinds(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e.kind() != "message_update")
            .map(|e| match e {
                AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                    format!("{}({})", e.kind(), message.role())
                }
                other => other.kind().to_string(),
            })
            .collect()
    }
    /// Each `tool_execution_end`: call id, result, whether an error.
    pub fn ends(&self) -> Vec<(String, AgentToolResult, bool)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    result,
                    is_error,
                    ..
                } => Some((tool_call_id, result, is_error)),
                _ => None,
            })
            .collect()
    }
    /// The call id of each `tool_execution_start`.
    pub fn starts(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => Some(tool_call_id),
                _ => None,
            })
            .collect()
    }
}

/// Runs one prompt through the loop and returns the recorder and final context.
pub async fn run(
    client: Arc<ScriptedClient>,
    tools: Vec<Arc<dyn AgentTool>>,
    configure: impl FnOnce(&mut AgentLoopConfig),
) -> (Recorder, AgentContext) {
    let mut config = AgentLoopConfig::new(model(), client);
    configure(&mut config);
    let mut context = AgentContext {
        system_prompt: "test".into(),
        messages: Vec::new(),
        tools,
    };
    let rec = Recorder::default();
    run_agent_loop(
        vec![Message::user("go")],
        &mut context,
        &config,
        CancellationToken::new(),
        &rec.sink(),
    )
    .await;
    (rec, context)
}

/// Every call's arguments with its start and end time.
pub type CallLog = Arc<Mutex<Vec<(Value, Instant, Instant)>>>;

type Behaviour = dyn Fn(
        Value,
        CancellationToken,
        ToolUpdateSink,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>
    + Send
    + Sync;

/// A tool whose behaviour is a closure, recording every call's arguments and timing.
pub struct FnTool {
    /// What the tool declares.
    pub meta: ToolMeta,
    /// What a call does.
    pub behaviour: Box<Behaviour>,
    /// Every call so far.
    pub calls: CallLog,
}

impl FnTool {
    /// A tool named `name` that runs `f` with the arguments, the
    /// cancellation token and the update sink; its schema takes an object.
    pub fn new<F, Fut>(name: &str, f: F) -> Self
    where
        F: Fn(Value, CancellationToken, ToolUpdateSink) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        FnTool {
            meta: ToolMeta::new(name, "test tool")
                .with_parameters(json!({"type":"object","properties":{}})),
            behaviour: Box::new(move |a, c, u| f(a, c, u).boxed()),
            calls: Arc::new(Mutex::new(Vec::new())),
        }
    }
    /// With this parameter schema.
    pub fn schema(mut self, schema: Value) -> Self {
        self.meta.parameters = schema;
        self
    }
    /// Declared sequential.
    pub fn sequential(mut self) -> Self {
        self.meta.execution_mode = Some(ExecutionMode::Sequential);
        self
    }
    /// The tool for the loop, and its call log.
    pub fn arc(self) -> (Arc<dyn AgentTool>, CallLog) {
        let calls = self.calls.clone();
        (Arc::new(self), calls)
    }
}

impl AgentTool for FnTool {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        let fut = (self.behaviour)(params.clone(), cx.cancel, cx.updates);
        let calls = self.calls.clone();
        async move {
            let start = Instant::now();
            let out = fut.await;
            calls.lock().unwrap().push((params, start, Instant::now()));
            out
        }
        .boxed()
    }
}

/// A tool that sleeps `ms` (from its arguments) and answers with its `label`.
pub fn sleeper(name: &str) -> FnTool {
    FnTool::new(name, |args, cancel, _| async move {
        let ms = args["ms"].as_u64().unwrap_or(0);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
            _ = cancel.cancelled() => return Err(ToolError::aborted()),
        }
        Ok(AgentToolResult::text(format!(
            "slept {}",
            args["label"].as_str().unwrap_or("")
        )))
    })
    .schema(
        json!({"type":"object","properties":{"ms":{"type":"number"},"label":{"type":"string"}}}),
    )
}
