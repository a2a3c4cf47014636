//! One `tools/call`, with the server's progress notifications delivered to
//! the running call as partial results (the agent loop's tool updates).
//!
//! rmcp gives every request a progress token of its own choosing and hands
//! notifications to the client handler on tasks of their own, in no set
//! order and possibly after the response. So the call is sent here with a
//! marker naming its update sink, and [`Watched`] (around the transport)
//! learns the token as the request goes out and delivers each progress
//! notification as it comes in, in the server's order, before the service
//! sees the response that follows it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_core::{AgentToolResult, ToolUpdateSink};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientJsonRpcMessage, ClientRequest, ErrorData, GetExtensions, GetMeta, InputRequest,
    InputResponses, JsonRpcMessage, ProgressNotificationParam, ProgressToken, RequestId,
    ServerNotification, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RxJsonRpcMessage, ServiceError};
use rmcp::transport::Transport;
use serde_json::{Value, json};

/// The most `input_required` rounds one call goes through (rmcp's cap).
const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The longest progress message kept, in bytes.
const MAX_MESSAGE: usize = 4096;

/// The running calls of one connection, by the progress token of the
/// request each one sent.
#[derive(Default)]
pub(super) struct ProgressRoutes {
    routes: Mutex<HashMap<ProgressToken, ToolUpdateSink>>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ToolUpdateSink>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn deliver(&self, param: &ProgressNotificationParam) {
        // The sink is cloned out first: a sink runs caller code, which must
        // not run under the lock.
        let sink = self.lock().get(&param.progress_token).cloned();
        if let Some(sink) = sink {
            sink.send(partial(param));
        }
    }

    /// Routes `token` to `sink`; gives back the routes of calls that have
    /// finished, to be dropped after the lock is released (a sink holds
    /// caller code).
    fn route(&self, token: ProgressToken, sink: ToolUpdateSink) -> Vec<ToolUpdateSink> {
        let mut routes = self.lock();
        let closed: Vec<ProgressToken> = routes
            .iter()
            .filter(|(_, sink)| sink.is_closed())
            .map(|(token, _)| token.clone())
            .collect();
        let finished = closed.iter().filter_map(|t| routes.remove(t)).collect();
        routes.insert(token, sink);
        finished
    }

    fn forget(&self, token: &ProgressToken) {
        let removed = self.lock().remove(token);
        drop(removed);
    }
}

/// A progress notification as a partial result: its message (or the
/// numbers) as text, the numbers in `details`.
fn partial(param: &ProgressNotificationParam) -> AgentToolResult {
    let message = param
        .message
        .as_deref()
        .map(|m| agent_tool::head_at_char_boundary(m, MAX_MESSAGE).to_string());
    let text = match (&message, param.total) {
        (Some(message), _) => message.clone(),
        (None, Some(total)) => format!("{} of {total}", param.progress),
        (None, None) => param.progress.to_string(),
    };
    AgentToolResult::text(text).with_details(json!({
        "progress": param.progress,
        "total": param.total,
        "message": message,
    }))
}

/// The marker on a call's request: where its progress goes.
#[derive(Clone)]
struct ProgressTo(ToolUpdateSink);

/// A client transport that routes progress notifications to the calls
/// that asked for them (see the module's docs).
pub(super) struct Watched<T> {
    inner: T,
    routes: Arc<ProgressRoutes>,
}

impl<T> Watched<T> {
    pub(super) fn new(inner: T, routes: Arc<ProgressRoutes>) -> Self {
        Watched { inner, routes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let Some(ProgressTo(sink)) = request.request.extensions().get::<ProgressTo>()
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            // Known before the request leaves, so no notification can
            // arrive for a token not yet routed. Calls already finished
            // (their sinks closed) go: one abandoned before its request
            // left has no one else to remove it.
            let finished = self.routes.route(token, sink.clone());
            drop(finished);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
        {
            self.routes.deliver(&progress.params);
        }
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Ends a request's routing when it is answered, and cancels it at the
/// server when the caller stops waiting first (a cancelled or timed-out
/// call), as rmcp's own `call_tool` does.
struct InFlight {
    peer: Peer<RoleClient>,
    routes: Arc<ProgressRoutes>,
    id: RequestId,
    token: ProgressToken,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.routes.forget(&self.token);
        if self.answered {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let param = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("request abandoned by the caller".into()),
        );
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(param).await;
        });
    }
}

/// Calls a tool and returns its final result, sending the server's
/// progress to `updates`. A server's `input_required` rounds (SEP-2322)
/// are answered as rmcp's default client answers them (this client offers
/// neither elicitation nor sampling: an elicitation is declined, roots are
/// none, sampling is refused), and its request state is sent back.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    routes: &Arc<ProgressRoutes>,
    mut params: CallToolRequestParams,
    updates: &ToolUpdateSink,
) -> Result<CallToolResult, ServiceError> {
    let mut state_only_rounds = 0u32;
    for _ in 0..MAX_ROUNDS {
        let mut request = CallToolRequest::new(params.clone());
        request.extensions.insert(ProgressTo(updates.clone()));
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(request),
                PeerRequestOptions::no_options(),
            )
            .await?;
        let mut in_flight = InFlight {
            peer: peer.clone(),
            routes: routes.clone(),
            id: handle.id.clone(),
            token: handle.progress_token.clone(),
            answered: false,
        };
        let answer = handle.await_response().await;
        in_flight.answered = true;
        drop(in_flight);
        match answer? {
            ServerResult::CallToolResult(result) => return Ok(result),
            // A result with nothing but `_meta`, as rmcp reads it.
            ServerResult::EmptyResult(_) => return Ok(CallToolResult::default()),
            ServerResult::InputRequiredResult(asked) => {
                let requests = asked.input_requests.unwrap_or_default();
                if requests.is_empty() && asked.request_state.is_none() {
                    return Err(ServiceError::UnexpectedResponse);
                }
                if requests.is_empty() {
                    // Only state to send back: the server is not ready yet.
                    let millis = (50u64 << state_only_rounds.min(3)).min(250);
                    tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                    state_only_rounds += 1;
                } else {
                    state_only_rounds = 0;
                }
                let mut responses = InputResponses::new();
                for (key, request) in requests {
                    responses.insert(key, answer_input(request)?);
                }
                params.input_responses = (!responses.is_empty()).then_some(responses);
                params.request_state = asked.request_state;
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        }
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_ROUNDS,
    })
}

/// What this client answers to a server's request for input.
fn answer_input(request: InputRequest) -> Result<Value, ServiceError> {
    match request {
        InputRequest::Elicitation(_) => Ok(json!({"action": "decline"})),
        InputRequest::ListRoots(_) => Ok(json!({"roots": []})),
        InputRequest::CreateMessage(_) => {
            Err(ServiceError::McpError(ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >()))
        }
        // A kind of input this client does not know is one it cannot give.
        _ => Err(ServiceError::UnexpectedResponse),
    }
}
