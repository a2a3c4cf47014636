//! The standing sandbox's lifetime as a program embedding the crate sees
//! it: it goes, with the placeholders it holds in the workspace, when the
//! last sandboxed operations are dropped. Needs bubblewrap (in test-all's
//! sandbox group).

use std::path::Path;

use agent_core::CancellationToken;
use agent_sandbox::{SandboxMode, SandboxPolicy};
use agent_tool::ops::{ExecEnd, ExecRequest};

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

#[tokio::test]
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
