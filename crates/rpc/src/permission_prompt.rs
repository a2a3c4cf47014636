//! Permission questions over RPC: `extension_ui_request` out, the
//! client's `extension_ui_response` back.

use super::*;

/// Permission questions over the protocol; give it to the session builder
/// ([`AgentSessionBuilder::permission_prompt`](coding_agent::AgentSessionBuilder::permission_prompt))
/// and the same value to [`run_rpc`].
#[derive(Clone, Default)]
pub struct RpcPermissionPrompt {
    pub(super) state: Arc<Mutex<PromptState>>,
}

#[derive(Default)]
pub(super) struct PromptState {
    pub(super) output: Option<RpcOutput>,
    pub(super) pending: HashMap<String, oneshot::Sender<Value>>,
}

impl RpcPermissionPrompt {
    /// A prompt not yet connected to an output.
    pub fn new() -> Self {
        Self::default()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, PromptState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands an `extension_ui_response` to the question waiting for it.
    pub(super) fn answer(&self, id: &str, response: Value) -> bool {
        match self.lock().pending.remove(id) {
            Some(tx) => tx.send(response).is_ok(),
            None => false,
        }
    }
}

/// The choices a question offers, in Pi's words.
const ANSWERS: [&str; 3] = ["Allow", "Deny", "Always allow"];

/// The `extension_ui_request` line a permission question is sent as: Pi's
/// `select` request, with the call and the rule's decision for a client
/// that shows more than the title.
#[derive(serde::Serialize)]
struct UiRequest {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    method: &'static str,
    title: String,
    options: [&'static str; 3],
    tool: String,
    args: Value,
    decision: Value,
}

impl PermissionPrompt for RpcPermissionPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        let output = {
            let mut state = self.lock();
            state.pending.insert(id.clone(), tx);
            state.output.clone()
        };
        let message = UiRequest {
            kind: "extension_ui_request",
            id: id.clone(),
            method: "select",
            title: request.question(),
            options: ANSWERS,
            decision: request.decision.to_json("rules"),
            tool: request.tool,
            args: request.args,
        };
        Box::pin(async move {
            let Some(output) = output else {
                return PermissionAnswer::No;
            };
            output.send(&message);
            match rx.await {
                Ok(response) => {
                    if response.get("cancelled").and_then(Value::as_bool) == Some(true) {
                        return PermissionAnswer::No;
                    }
                    if let Some(confirmed) = response.get("confirmed").and_then(Value::as_bool) {
                        return if confirmed {
                            PermissionAnswer::Yes
                        } else {
                            PermissionAnswer::No
                        };
                    }
                    match response.get("value").and_then(Value::as_str) {
                        Some("Allow") | Some("yes") => PermissionAnswer::Yes,
                        Some("Always allow") | Some("always") => PermissionAnswer::Always,
                        _ => PermissionAnswer::No,
                    }
                }
                Err(_) => PermissionAnswer::No,
            }
        })
    }
}
