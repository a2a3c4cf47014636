//! Landlock: kernel-enforced limits on what a thread, and every process it
//! starts, may write and connect to. Applied without `unsafe`: a fresh
//! thread restricts itself and then spawns the child, which inherits the
//! thread's domain.

use std::io;
use std::path::PathBuf;

use agent_core::CancellationToken;
use coding_agent::sandbox::{SandboxMode, SandboxPolicy};
use futures::FutureExt;
use futures::future::BoxFuture;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::process::{ExecEnd, ExecRequest, OutputSink, ProcessOps, run_local_with};

/// Set to `1` to behave as if the kernel had no Landlock (to see and test
/// the refusal); it can only make the sandbox refuse, never weaken it.
pub const SIMULATE_NO_LANDLOCK_VAR: &str = "CODING_AGENT_SIMULATE_NO_LANDLOCK";

/// The newest ABI we ask for; older kernels are told apart by what they refuse.
const ABI_WRITE: ABI = ABI::V3;

/// Devices commands may write to inside the sandbox.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

fn simulated_absence() -> bool {
    std::env::var_os(SIMULATE_NO_LANDLOCK_VAR).is_some_and(|v| v == "1")
}

fn unavailable(feature: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "Sandbox: the kernel cannot enforce it ({feature} is missing); bash refuses to run unconfined. Run with --sandbox off (or sandbox.mode \"off\") to run commands without the sandbox."
        ),
    )
}

/// Restricts the calling thread (and what it spawns) to writing only below
/// `dirs`; reads stay unrestricted. Used by the confined file operations,
/// where the user-space checks already hold: an old kernel only loses this
/// second line of defence.
pub(crate) fn restrict_thread_writes(dirs: &[PathBuf]) -> io::Result<()> {
    if simulated_absence() {
        return Ok(());
    }
    let created = Ruleset::default()
        .handle_access(AccessFs::from_write(ABI_WRITE))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(dirs, AccessFs::from_write(ABI_WRITE))));
    match created.and_then(|r| r.restrict_self()) {
        Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
            tracing::debug!("Landlock not available: file writes rely on beneath-resolution alone");
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => Err(io::Error::other(format!(
            "Sandbox: cannot restrict the write: {e}"
        ))),
    }
}

/// Which protections a sandboxed command ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protections {
    /// Writes limited to the roots, the temp dir and harmless devices.
    pub filesystem: bool,
    /// TCP connect and bind refused.
    pub network: bool,
    /// Signals and abstract unix sockets limited to the sandbox.
    pub scoped: bool,
}

/// Restricts the calling thread for a sandboxed command, requiring every
/// protection the policy asks for.
///
/// # Errors
/// [`io::ErrorKind::Unsupported`] naming the missing kernel feature.
pub fn restrict_thread_for_commands(policy: &SandboxPolicy) -> io::Result<Protections> {
    if simulated_absence() {
        return Err(unavailable(&format!(
            "Landlock ({SIMULATE_NO_LANDLOCK_VAR}=1)"
        )));
    }
    let mut writable: Vec<PathBuf> = Vec::new();
    if policy.mode == SandboxMode::WorkspaceWrite {
        writable.extend(policy.roots.iter().cloned());
        writable.push(std::env::temp_dir());
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI_WRITE))
        .map_err(|_| unavailable("Landlock ABI 3 (Linux 6.2)"))?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|_| unavailable("Landlock network rules, ABI 4 (Linux 6.7)"))?;
    }
    // Best effort: signals and abstract sockets (ABI 6) are extra.
    let scoped = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::from_all(ABI::V6))
        .and_then(|r| r.create())
        .is_ok();
    if scoped {
        ruleset = ruleset
            .set_compatibility(CompatLevel::BestEffort)
            .scope(Scope::from_all(ABI::V6))
            .map_err(|e| io::Error::other(e.to_string()))?;
    }
    let created = ruleset
        .create()
        .map_err(|_| unavailable("Landlock (Linux 5.13, enabled at boot)"))?
        .set_compatibility(CompatLevel::BestEffort)
        .add_rules(path_beneath_rules(
            &writable,
            AccessFs::from_write(ABI_WRITE),
        ))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_write(ABI_WRITE),
            ))
        })
        .map_err(|e| io::Error::other(format!("Sandbox: cannot add a rule: {e}")))?;
    let status = created
        .restrict_self()
        .map_err(|e| io::Error::other(format!("Sandbox: cannot restrict: {e}")))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(unavailable("Landlock"));
    }
    Ok(Protections {
        filesystem: true,
        network: !policy.network,
        scoped,
    })
}

/// Whether this kernel can enforce `policy` for commands (checked on a
/// throw-away thread).
pub fn commands_can_be_confined(policy: &SandboxPolicy) -> Result<Protections, String> {
    let policy = policy.clone();
    std::thread::spawn(move || restrict_thread_for_commands(&policy))
        .join()
        .map_err(|_| "the check panicked".to_string())?
        .map_err(|e| e.to_string())
}

/// Does `name` look like a secret per `patterns` (`*` matches any run)?
fn looks_secret(name: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| wildcard(p, name))
}

fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// [`ProcessOps`] that run every command under Landlock (writes only below
/// the roots, the temp dir and harmless devices; TCP refused unless
/// `sandbox.network`), with secret-looking variables removed. Refuses to
/// run when the kernel cannot enforce the policy.
#[derive(Debug, Clone)]
pub struct SandboxedProcessOps {
    policy: SandboxPolicy,
    scoped: bool,
}

impl SandboxedProcessOps {
    /// Commands confined by `policy`.
    pub fn new(policy: SandboxPolicy) -> Self {
        let scoped = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .scope(Scope::from_all(ABI::V6))
            .and_then(|r| r.create())
            .is_ok();
        SandboxedProcessOps { policy, scoped }
    }
}

impl ProcessOps for SandboxedProcessOps {
    fn sandbox_report(&self) -> Option<serde_json::Value> {
        let writes = match self.policy.mode {
            SandboxMode::ReadOnly => "none".to_string(),
            _ => format!(
                "only under {} and the temp dir",
                self.policy
                    .roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(serde_json::json!({
            "mode": self.policy.mode.as_str(),
            "enforcedBy": "landlock",
            "writes": writes,
            "tcp": if self.policy.network { "allowed" } else { "blocked" },
            "signalsAndAbstractSockets": if self.scoped { "scoped" } else { "not scoped (kernel before 6.12)" },
            "secretEnvRemoved": true,
        }))
    }

    fn exec<'a>(
        &'a self,
        mut request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>> {
        request.env.retain(|(name, _)| {
            let name = name.to_string_lossy();
            self.policy.pass_env.iter().any(|p| *p == name)
                || !looks_secret(&name, &self.policy.secret_env)
        });
        let policy = self.policy.clone();
        run_local_with(request, on_data, cancel, move |command| {
            let runtime = tokio::runtime::Handle::current();
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        restrict_thread_for_commands(&policy)?;
                        let _entered = runtime.enter();
                        command.spawn()
                    })
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the spawning thread panicked")))
            })
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_patterns() {
        let p: Vec<String> = coding_agent::sandbox::DEFAULT_SECRET_ENV
            .iter()
            .map(|s| s.to_string())
            .collect();
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET",
            "DB_PASSWORD_X",
            "PASSWORD",
        ] {
            assert!(looks_secret(name, &p), "{name}");
        }
        for name in ["PATH", "HOME", "TOKENIZER", "CARGO_HOME"] {
            assert!(!looks_secret(name, &p), "{name}");
        }
    }
}
