//! The codemode tool as the stock agent wires it: scripts run in a worker
//! that is this binary in its hidden worker mode, and `store()` values live
//! in the session file, per branch.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_codemode::{
    CodemodeTool, MemoryStore, STORE_ENTRY_TYPE, ScriptStore, WorkerSandbox, replay_store,
};
use agent_sessions::EntryKind;
use coding_agent::{AgentSession, Seconds, Settings, ToolDefinition};
use serde_json::{Map, Value};

/// The argument that starts this binary as a script worker.
pub const WORKER_ARG: &str = "__codemode-worker";

/// Serves one script when started as a worker (before anything else runs:
/// no runtime, no logging, nothing opened).
pub fn serve_if_worker() {
    if std::env::args_os().nth(1).is_some_and(|a| a == WORKER_ARG) {
        agent_codemode::worker_main();
    }
}

/// Binds the tool's store to the session once it is built.
// The session holds the tool, which holds this: a cycle that lives as long
// as the process does, which is what the stock binary needs.
#[derive(Clone)]
pub struct Binding(Arc<OnceLock<AgentSession>>, WorkerSandbox);

impl Binding {
    /// From now on `store()` values go to this session's file; when
    /// codemode is active, a warm worker is started so the first script
    /// does not wait for one.
    pub fn bind(&self, session: &AgentSession) {
        let _ = self.0.set(session.clone());
        if session
            .active_tool_names()
            .iter()
            .any(|n| n == agent_codemode::CODEMODE_TOOL_NAME)
        {
            self.1.prewarm();
        }
    }
}

/// `store()` values as `codemode-store` entries on the session's current
/// branch; in memory when the session is not recorded.
struct SessionStore {
    session: Binding,
    memory: MemoryStore,
}

impl ScriptStore for SessionStore {
    fn load(&self) -> BTreeMap<String, Value> {
        let Some(manager) = self.session.0.get().and_then(AgentSession::session_manager) else {
            return self.memory.load();
        };
        let manager = manager.lock().unwrap_or_else(|p| p.into_inner());
        let branch = manager.path_to(manager.leaf_id());
        replay_store(branch.iter().filter_map(|entry| match &entry.kind {
            EntryKind::Custom {
                custom_type,
                data: Some(data),
            } if custom_type == STORE_ENTRY_TYPE => Some(data),
            _ => None,
        }))
    }

    fn save(&self, set: Map<String, Value>, delete: Vec<String>) {
        let Some(manager) = self.session.0.get().and_then(AgentSession::session_manager) else {
            return self.memory.save(set, delete);
        };
        let mut manager = manager.lock().unwrap_or_else(|p| p.into_inner());
        let data = serde_json::json!({ "set": set, "delete": delete });
        if let Err(e) = manager.append(EntryKind::Custom {
            custom_type: STORE_ENTRY_TYPE.to_string(),
            data: Some(data),
        }) {
            tracing::warn!(error = %e, "could not record a script's stored values");
        }
    }
}

/// The deadline of scripts that set none: settings `codemode.timeoutSeconds`
/// (`0`: none; clamped as every timeout setting), else 600 s.
fn timeout(settings: &Settings) -> Option<Duration> {
    let seconds = settings
        .known()
        .codemode
        .timeout_seconds
        .map(|Seconds(s)| s);
    agent_tool::timeout_seconds(seconds, agent_codemode::DEFAULT_TIMEOUT.as_secs_f64())
        .map(Duration::from_secs_f64)
}

/// The tool (inactive until `--tools +codemode` or `defaultTools`), and the
/// binding to give the session once it is built.
pub fn definition(settings: &Settings) -> Option<(ToolDefinition, Binding)> {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            tracing::warn!(error = %e, "codemode is unavailable: this program cannot find itself");
            return None;
        }
    };
    let sandbox = WorkerSandbox::new(exe, [WORKER_ARG]);
    let binding = Binding(Arc::default(), sandbox.clone());
    let store = SessionStore {
        session: binding.clone(),
        memory: MemoryStore::default(),
    };
    let tool = CodemodeTool::new(sandbox)
        .timeout(timeout(settings))
        .store(Arc::new(store));
    Some((tool.definition(), binding))
}
