//! Codemode: the model writes a short JavaScript program whose
//! `tools.<name>(args)` calls are real tool calls of the run, and only what
//! the program prints reaches the model.
//!
//! A script can run reads in parallel with `Promise.all`, chain dependent
//! calls, and filter large results down to what matters, in one model turn.
//! Its tool calls go through the loop's own pipeline (argument validation,
//! `before_tool_call` with a session's permission rules and hooks,
//! `after_tool_call`) via [`agent_core::NestedToolCalls`], so a script can do
//! nothing a direct call could not.
//!
//! The pieces, each with one job:
//! - [`parse_source`]: the input (JavaScript, optionally led by an options line);
//! - [`Vm`]: one script on QuickJS (`rquickjs`), with frozen built-ins, a heap
//!   and stack limit, an interrupt check between promise jobs, and Pi's
//!   globals (`tools`, `text`, `image`, `console`, `store`/`load`, `exit`,
//!   `ALL_TOOLS`, `describeTool`);
//! - [`ScriptSandbox`]: where the VM runs: [`InProcessSandbox`] (a thread) or
//!   [`WorkerSandbox`] (a confined child process, see [`confine`]);
//! - [`CodemodeTool`]: the tool itself, which settles the VM's calls and lays
//!   out the result;
//! - [`ScriptStore`]: where `store()` values live between scripts.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agent_codemode::{CodemodeTool, MemoryStore, WorkerSandbox};
//! // The worker is a program that calls `agent_codemode::worker_main()`.
//! let sandbox = WorkerSandbox::new("/usr/local/bin/coding-agent", ["__codemode-worker"]);
//! let tool = CodemodeTool::new(sandbox)
//!     .store(Arc::new(MemoryStore::default()))
//!     .describing(["read", "bash"]);
//! # let _ = tool;
//! ```

pub mod confine;
mod host;
mod output;
mod protocol;
mod sandbox;
mod source;
mod store;
mod tool;
mod vm;
mod worker;
mod worker_main;

pub use host::{MAX_RESULT_CHARS, RESULT_BUDGET};
pub use output::{CallRecord, DEFAULT_MAX_OUTPUT_TOKENS, Ending, OutputItem, Rendered, render};
pub use protocol::{
    HostMessage, MAX_FRAME_BYTES, OutputKind, ScriptEnd, ScriptRequest, ScriptTool, VmEvent,
    VmLimits, read_frame, write_frame,
};
pub use sandbox::{BoxFuture, InProcessSandbox, SandboxError, ScriptRun, ScriptSandbox, Stop};
pub use source::{
    MAX_TIMEOUT_MS, OPTIONS_PREFIX, ScriptSource, SourceError, js_identifier, parse_source,
};
pub use store::{MemoryStore, STORE_ENTRY_TYPE, ScriptStore, replay_store};
pub use tool::{CODEMODE_TOOL_NAME, CodemodeTool, DEFAULT_TIMEOUT};
pub use vm::{Vm, VmInterrupt, VmStartError};
pub use worker::{DEFAULT_MAX_WORKERS, DEFAULT_WAIT_LIMIT, WorkerSandbox};
pub use worker_main::worker_main;
