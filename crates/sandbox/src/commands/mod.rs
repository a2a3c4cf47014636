//! Confinement of the commands bash runs: each command starts inside
//! bubblewrap's namespaces (user, mount, pid, ipc, uts, cgroup) under a
//! seccomp filter, with every inherited
//! descriptor closed and secret-looking variables removed.
//!
//! What a command then can and cannot do:
//! - **Files:** the whole file system is mounted read-only, metadata
//!   included (no chmod, chown, touch or chattr outside); the roots (and,
//!   unless `sandbox.excludeTmp`, the temp dir) are writable in
//!   workspace-write mode. Inside them `.git`, `.pi` and the agent
//!   directory stay read-only, and cannot be created where they do not
//!   exist yet (see `placeholders`). The directories on the way to a
//!   protected path are bound onto themselves, so no command can rename,
//!   remove or replace them while any sandbox stands (a mount point is
//!   busy). `/dev` is a fresh minimal one (null, zero,
//!   random, tty...), and no command can create a device node.
//! - **Network off:** a network namespace of its own, holding only a
//!   loopback: TCP and UDP reach nothing outside (a test server on
//!   127.0.0.1 inside one command still works), `/proc/net` lists none of
//!   the host's sockets. No unix socket can be made at all, so socket files
//!   such as docker.sock or the ssh agent's are out of reach, and neither
//!   are abstract sockets.
//! - **Processes:** own pid namespace with its own `/proc`: the agent and
//!   every other process are invisible, so neither their command lines nor
//!   their environments can be read, and none can be signalled.
//! - **Secrets:** variables made of credential words are removed (see
//!   [`SandboxPolicy::hides_env`]); denied files and directories that exist
//!   when the command starts are hidden.
//!
//! The namespaces are built once and kept while the command lines they
//! were built from stay the same (see `resident`): a command joins them
//! in a pid namespace of its own, which costs about a millisecond where a
//! bubblewrap set-up costs several.
//!
//! The agent itself is not confined, and commands may run in parallel: all
//! it does on paths a command can change, while commands may run (the
//! placeholders, the check after each command, reading git's index), goes
//! through `O_NOFOLLOW` directory handles walked down from the root, never
//! by path (see the crate-private `beneath` module).
//!
//! Nothing runs unconfined in silence: where bubblewrap is missing or the
//! kernel refuses the namespaces, the command is refused with the reason.

mod bwrap;
mod child;
mod gitlinks;
mod integrity;
mod placeholders;
mod resident;
mod seccomp;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::policy::{SandboxMode, SandboxPolicy};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use bwrap::BWRAP_PATH_VAR;
pub use resident::{SandboxLease, shut_down};

use agent_local_ops::{LocalProcessOps, run_local_with};
use agent_tool::ops::{ExecEnd, ExecRequest, OutputFile, OutputSink, ProcessOps};

/// What the sandbox needs, found once per process.
#[derive(Debug, Clone)]
struct Launcher {
    bwrap: PathBuf,
    disable_userns: bool,
}

/// The launcher once it worked; failures are not remembered, so a
/// passing condition (too many open files) is not taken for a missing
/// kernel feature.
static LAUNCHER: OnceLock<Launcher> = OnceLock::new();

fn refusal(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "Sandbox: cannot confine the command ({why}); bash refuses to run unconfined. Run with --sandbox off (or sandbox.mode \"off\") to run commands without the sandbox."
        ),
    )
}

/// Finds bubblewrap and checks that it can build the sandbox here, by
/// running `true` in one.
fn launcher(policy: &SandboxPolicy) -> io::Result<Launcher> {
    if let Some(l) = LAUNCHER.get() {
        return Ok(l.clone());
    }
    let bwrap = bwrap::find().map_err(refusal)?;
    let filter = Arc::new(
        seccomp::command_filter(policy.network)
            .ok_or_else(|| refusal("no seccomp filter for this CPU architecture"))?,
    );
    // The probe asks about the machine, not the repository: nothing a
    // project contains (a dangling link at `.pi`) may make the machine look
    // unable to confine, which would turn the MCP server's default sandbox
    // off.
    let mut probe = policy.clone();
    probe.roots.clear();
    probe.protected.clear();
    probe.deny_read.clear();
    let mut last = String::new();
    for disable_userns in [true, false] {
        let mut command = std::process::Command::new(&bwrap);
        command
            .args(bwrap::args(&probe, &[], disable_userns).map_err(refusal)?)
            .args(["--chdir", "/", "--", "true"])
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        child::confine_before_exec(&mut command, filter.clone());
        let output = match command.output() {
            Ok(o) => o,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("Sandbox: cannot start {}: {e}", bwrap.display()),
                ));
            }
        };
        if output.status.success() {
            let found = Launcher {
                bwrap,
                disable_userns,
            };
            let _ = LAUNCHER.set(found.clone());
            return Ok(found);
        }
        last = String::from_utf8_lossy(&output.stderr).trim().to_string();
        // Only an old bubblewrap lacking the option gets the second try.
        if !last.contains("disable-userns") {
            break;
        }
    }
    Err(refusal(describe_bwrap_failure(&last)))
}

/// bubblewrap's complaint in terms of what is missing.
fn describe_bwrap_failure(stderr: &str) -> String {
    let lower = stderr.to_ascii_lowercase();
    let what = if lower.contains("namespace")
        || lower.contains("uid map")
        || lower.contains("operation not permitted")
    {
        "the kernel or the container refuses to create user namespaces (allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0; in Docker or Podman, a seccomp or AppArmor profile that permits them)"
    } else if lower.contains("too many open files") {
        "too many open files"
    } else {
        "bubblewrap failed"
    };
    if stderr.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {stderr}")
    }
}

/// Why commands cannot be confined on this machine (bubblewrap missing or
/// not working here); its text is the refusal a command would get.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CannotConfine(#[from] io::Error);

/// Whether commands can be confined by `policy` on this machine.
///
/// # Errors
/// The reason when not.
pub fn commands_can_be_confined(policy: &SandboxPolicy) -> Result<(), CannotConfine> {
    launcher(policy).map(|_| ()).map_err(CannotConfine)
}

/// [`ProcessOps`] that run every command in a sandbox (see the module
/// docs). Refuses to run when the sandbox cannot be built.
///
/// The standing sandbox (and the placeholders it holds in the workspace)
/// is taken down when the last `SandboxedProcessOps` of the process is
/// dropped, e.g. with the session whose tools held it: a program that
/// lets its session go need not call [`shut_down`] (one that ends with
/// `std::process::exit` while a session lives still must). To keep it
/// across operations made anew for each call, hold a [`SandboxLease`].
#[derive(Debug, Clone)]
pub struct SandboxedProcessOps {
    policy: SandboxPolicy,
    _lease: Arc<resident::SandboxLease>,
}

impl SandboxedProcessOps {
    /// Commands confined by `policy`.
    pub fn new(policy: SandboxPolicy) -> Self {
        SandboxedProcessOps {
            policy,
            _lease: Arc::new(resident::SandboxLease::take()),
        }
    }
}

impl ProcessOps for SandboxedProcessOps {
    // The commands run on this machine: its directories, shells and temp dir.
    fn working_dir_exists(&self, cwd: &Path) -> bool {
        LocalProcessOps.working_dir_exists(cwd)
    }

    fn resolve_shell(&self, explicit: Option<&str>) -> Result<PathBuf, agent_tool::ToolError> {
        LocalProcessOps.resolve_shell(explicit)
    }

    fn create_output_file(&self) -> io::Result<Box<dyn OutputFile>> {
        LocalProcessOps.create_output_file()
    }

    fn sandbox_report(&self) -> Option<serde_json::Value> {
        let list = |paths: &[PathBuf]| -> Vec<String> {
            paths.iter().map(|p| p.display().to_string()).collect()
        };
        let tmp = if bwrap::shared_tmp(&self.policy).is_some() {
            "shared, writable"
        } else if self.policy.mode == SandboxMode::WorkspaceWrite && !self.policy.exclude_tmp {
            "private and empty (the workspace or the home lies in the temp dir)"
        } else {
            "private and empty"
        };
        Some(serde_json::json!({
            "mode": self.policy.mode.as_str(),
            "enforcedBy": "bubblewrap namespaces + seccomp",
            "writableRoots": if self.policy.mode == SandboxMode::WorkspaceWrite { list(&self.policy.roots) } else { Vec::new() },
            "readOnlyInsideRoots": list(&self.policy.protected),
            "tmp": tmp,
            "network": if self.policy.network { "allowed" } else { "blocked: own network namespace (TCP and UDP reach only its loopback), no unix sockets" },
            "processes": "own pid namespace: the agent and other processes are invisible",
            "devices": "fresh /dev; no device nodes can be made",
            "namespaces": if RESIDENT_UNUSABLE.load(Ordering::Relaxed) {
                "built for each command"
            } else {
                "kept between commands; each command with a pid namespace and /proc of its own"
            },
            "secretEnvRemoved": true,
        }))
    }

    fn exec<'a>(
        &'a self,
        mut request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>> {
        async move {
            let filter = Arc::new(
                seccomp::command_filter(self.policy.network)
                    .ok_or_else(|| refusal("no seccomp filter for this CPU architecture"))?,
            );
            let env = self.policy.env_filter();
            request
                .env
                .retain(|(name, value)| !env.hides_var(&name.to_string_lossy(), &value.to_string_lossy()));
            // Held until the command ends: a protected path that does not
            // exist yet gets an empty read-only directory, not a free name.
            let read_only = bwrap::read_only_paths(&self.policy).map_err(refusal)?;
            let writable = bwrap::writable_ones(&self.policy, &read_only);
            let places = bwrap::writable_places(&self.policy);
            let workspace_write = self.policy.mode == SandboxMode::WorkspaceWrite;
            let _placeholders = workspace_write.then(|| placeholders::Placeholders::hold(&writable, &places));
            let check = workspace_write
                .then(|| integrity::Integrity::record(&read_only, &places, &self.policy.roots));
            let options_for = |launcher: &Launcher| {
                bwrap::args(&self.policy, &read_only, launcher.disable_userns).map_err(refusal)
            };
            let start = |launcher: &Launcher, options: &[OsString]| {
                let held = if workspace_write {
                    placeholders::Placeholders::hold(&writable, &places)
                } else {
                    placeholders::Placeholders::default()
                };
                let key: Vec<OsString> = options
                    .iter()
                    .filter(|a| *a != "--die-with-parent")
                    .cloned()
                    .collect();
                resident::get_or_start(&launcher.bwrap, &key, held, &filter, !self.policy.network)
            };
            let (launcher, options, standing) = if RESIDENT_UNUSABLE.load(Ordering::Relaxed) {
                let launcher = launcher(&self.policy)?;
                let options = options_for(&launcher)?;
                (launcher, options, None)
            } else {
                // The first standing sandbox doubles as the check that
                // bubblewrap works here (one bubblewrap instead of two for a
                // process that runs one command); only when it fails is the
                // machine asked properly, for the reason or the older
                // bubblewrap's options.
                let checked = LAUNCHER.get().cloned();
                let first = match &checked {
                    Some(l) => l.clone(),
                    None => Launcher {
                        bwrap: bwrap::find().map_err(refusal)?,
                        disable_userns: true,
                    },
                };
                let options = options_for(&first)?;
                match start(&first, &options) {
                    Ok(r) => {
                        let _ = LAUNCHER.set(first.clone());
                        (first, options, Some(r))
                    }
                    Err(e) if checked.is_some() => {
                        tracing::debug!(error = %e, "no resident sandbox; one bubblewrap per command");
                        RESIDENT_UNUSABLE.store(true, Ordering::Relaxed);
                        (first, options, None)
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "the first resident sandbox failed; checking bubblewrap");
                        let launcher = launcher(&self.policy)?;
                        let options = options_for(&launcher)?;
                        let standing = start(&launcher, &options)
                            .inspect_err(|e| {
                                tracing::debug!(error = %e, "no resident sandbox; one bubblewrap per command");
                                RESIDENT_UNUSABLE.store(true, Ordering::Relaxed);
                            })
                            .ok();
                        (launcher, options, standing)
                    }
                }
            };
            let end = match standing {
                Some(resident) => {
                    let cwd = std::ffi::CString::new(request.cwd.as_os_str().as_encoded_bytes())
                        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the working directory contains a NUL byte"))?;
                    let namespaces = resident.namespaces.clone();
                    let end = run_local_with(request, &mut *on_data, cancel, None, move |command| {
                        child::join_before_exec(command.as_std_mut(), namespaces, cwd, filter, resident::own_strings());
                        command.spawn().map_err(|e| {
                            io::Error::new(e.kind(), format!("Sandbox: cannot start the command: {e}"))
                        })
                    })
                    .await;
                    resident::release(resident);
                    end
                }
                None => {
                    let mut wrapper = options;
                    bwrap::chdir_then_command(&mut wrapper, &request.cwd);
                    wrapper.insert(0, launcher.bwrap.into_os_string());
                    run_local_with(request, &mut *on_data, cancel, Some(wrapper), move |command| {
                        child::confine_before_exec(command.as_std_mut(), filter);
                        command.spawn().map_err(|e| {
                            io::Error::new(e.kind(), format!("Sandbox: cannot start the command: {e}"))
                        })
                    })
                    .await
                }
            };
            // Whatever the command did around the read-only mounts.
            if let Some(check) = check {
                let found = check.restore();
                if found.rebuild {
                    // Its mounts now stand on what was moved.
                    resident::shut_down();
                }
                for note in found.notes {
                    on_data(format!("\n{note}\n").as_bytes());
                }
            }
            end
        }
        .boxed()
    }
}

/// Set once joining a resident sandbox failed here (a set-user-ID
/// bubblewrap, whose namespaces belong to root): every command then gets a
/// bubblewrap of its own.
static RESIDENT_UNUSABLE: AtomicBool = AtomicBool::new(false);

/// Starts long-running programs (a project's MCP servers) in the same
/// sandbox as bash: everything a command could change, a program started
/// from it later must not be able to use to get out.
///
/// The placeholders of protected paths that do not exist yet are held for
/// as long as the value lives, since the programs it starts run that long.
///
/// ```no_run
/// use agent_sandbox::{SandboxMode, SandboxPolicy};
/// use agent_sandbox::SandboxedPrograms;
/// let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/work/project");
/// let programs = SandboxedPrograms::new(policy)?;
/// let mut server = programs.command("/work/project".as_ref(), "node".as_ref())?;
/// server.arg("server.js");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct SandboxedPrograms {
    policy: SandboxPolicy,
    read_only: Vec<PathBuf>,
    launcher: Launcher,
    _placeholders: Option<placeholders::Placeholders>,
}

impl SandboxedPrograms {
    /// Programs confined by `policy`.
    ///
    /// # Errors
    /// The sandbox cannot be built here (bubblewrap missing, namespaces
    /// refused), with the reason.
    pub fn new(policy: SandboxPolicy) -> io::Result<Self> {
        let launcher = launcher(&policy)?;
        let read_only = bwrap::read_only_paths(&policy).map_err(refusal)?;
        let placeholders = (policy.mode == SandboxMode::WorkspaceWrite).then(|| {
            placeholders::Placeholders::hold(
                &bwrap::writable_ones(&policy, &read_only),
                &bwrap::writable_places(&policy),
            )
        });
        Ok(SandboxedPrograms {
            policy,
            read_only,
            launcher,
            _placeholders: placeholders,
        })
    }

    /// A command running `program` in `cwd` inside the sandbox, with the
    /// agent's environment minus secret-looking variables. Add arguments
    /// and variables to it as usual; its descriptors above 2 are closed and
    /// the seccomp filter applied when it starts.
    ///
    /// # Errors
    /// No seccomp filter exists for this CPU architecture.
    pub fn command(
        &self,
        cwd: &std::path::Path,
        program: &std::ffi::OsStr,
    ) -> io::Result<tokio::process::Command> {
        let filter = Arc::new(
            seccomp::command_filter(self.policy.network)
                .ok_or_else(|| refusal("no seccomp filter for this CPU architecture"))?,
        );
        let mut command = tokio::process::Command::new(&self.launcher.bwrap);
        command
            .args({
                let mut args =
                    bwrap::args(&self.policy, &self.read_only, self.launcher.disable_userns)
                        .map_err(refusal)?;
                bwrap::chdir_then_command(&mut args, cwd);
                args
            })
            .arg(program)
            .env_clear()
            .envs({
                let env = self.policy.env_filter();
                std::env::vars_os().filter(move |(name, value)| {
                    !env.hides_var(&name.to_string_lossy(), &value.to_string_lossy())
                })
            });
        child::confine_before_exec(command.as_std_mut(), filter);
        Ok(command)
    }
}
