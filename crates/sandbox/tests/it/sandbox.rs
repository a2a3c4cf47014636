//! The standing sandbox's lifetime as a program embedding the crate sees
//! it: it goes, with the placeholders it holds in the workspace, when the
//! last sandboxed operations are dropped. Needs bubblewrap (in test-all's
//! sandbox group).

use std::path::Path;

use agent_sandbox::{SandboxMode, SandboxPolicy};
use agent_tool::ops::{ExecEnd, ExecRequest};
use tokio_util::sync::CancellationToken;

async fn run(ops: &agent_tool::Operations, cwd: &Path, command: &str) -> String {
    let mut out = Vec::new();
    let mut sink = |b: &[u8]| out.extend_from_slice(b);
    let request = ExecRequest {
        shell: "/bin/sh".into(),
        command: command.into(),
        cwd: cwd.to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        timeout: None,
    };
    let end = ops
        .processes
        .exec(request, &mut sink, CancellationToken::new())
        .await
        .expect("the command runs in the sandbox");
    assert_eq!(
        end,
        ExecEnd::Exited(Some(0)),
        "{}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// One test: the standing sandbox and the lease count are the process's,
/// so the two cases must not run side by side.
#[tokio::test]
async fn the_sandbox_lives_as_long_as_its_holders() {
    the_sandbox_and_its_placeholders_go_with_the_last_operations().await;
    a_lease_keeps_the_sandbox_across_operations_made_anew().await;
}

async fn the_sandbox_and_its_placeholders_go_with_the_last_operations() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    // Not a repository: `.git` gets a read-only placeholder while the
    // sandbox stands, so a command cannot plant one.
    let policy = SandboxPolicy::workspace_only(&ws);
    assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
    let first = agent_sandbox::operations(&policy).unwrap();
    let second = agent_sandbox::operations(&policy).unwrap();
    let said = run(&first, &ws, "mkdir .git/hooks 2>&1; echo done").await;
    assert!(said.contains("done"), "{said}");
    assert!(
        ws.join(".git").is_dir(),
        "no placeholder while the sandbox stands"
    );
    assert!(
        !ws.join(".git/hooks").exists(),
        "a command planted a hook directory"
    );
    // Another session's operations still hold it.
    drop(first);
    assert!(ws.join(".git").is_dir(), "taken down while still held");
    run(&second, &ws, "true").await;
    drop(second);
    assert!(
        !ws.join(".git").exists(),
        "the placeholder outlived the last operations"
    );
}

async fn a_lease_keeps_the_sandbox_across_operations_made_anew() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let policy = SandboxPolicy::workspace_only(&ws);
    let lease = agent_sandbox::SandboxLease::take();
    // A message queue made by one command is seen by the next only in the
    // same standing sandbox.
    let ops = agent_sandbox::operations(&policy).unwrap();
    run(&ops, &ws, "ipcmk -Q >/dev/null").await;
    drop(ops);
    assert!(
        ws.join(".git").is_dir(),
        "taken down while the lease holds it"
    );
    let ops = agent_sandbox::operations(&policy).unwrap();
    let queues = run(&ops, &ws, "ipcs -q | grep -c '^0x' || true").await;
    assert_eq!(queues.trim(), "1", "not the same sandbox: {queues}");
    drop(ops);
    drop(lease);
    assert!(
        !ws.join(".git").exists(),
        "the last holder went; the sandbox stayed"
    );
}
