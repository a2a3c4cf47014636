//! All seven tools over operations that are not the local disk: a backend
//! that serves a virtual root (`/virtual/ws`, which does not exist here) from
//! a temporary directory, and records every path it is asked about. A tool
//! that went around the operations to the real disk would find nothing at
//! `/virtual/ws` and fail.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_core::CancellationToken;
use agent_local_ops::{LocalFileOps, LocalProcessOps};
use agent_tool::ToolError;
use agent_tool::ToolSettings;
use agent_tool::ops::{
    DirEntryInfo, ExecEnd, ExecRequest, FileInfo, FileOps, Operations, OutputFile, OutputSink,
    ProcessOps, WriteOutcome,
};
use futures::future::BoxFuture;
use serde_json::json;
use test_support::tool_call::call_with;
use tools_builtin::ToolSet;

const VIRTUAL: &str = "/virtual/ws";

/// Maps `/virtual/ws/...` to a real directory.
#[derive(Clone)]
struct Remap {
    real: PathBuf,
    seen: Arc<Mutex<Vec<PathBuf>>>,
}

impl Remap {
    fn to_real(&self, path: &Path) -> io::Result<PathBuf> {
        self.seen.lock().unwrap().push(path.to_path_buf());
        match path.strip_prefix(VIRTUAL) {
            Ok(rel) => Ok(self.real.join(rel)),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("outside the virtual root: {}", path.display()),
            )),
        }
    }
}

impl FileOps for Remap {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        LocalFileOps.metadata(&self.to_real(path)?)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        LocalFileOps.open_read(&self.to_real(path)?)
    }
    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        LocalFileOps.check_access(&self.to_real(path)?, write)
    }
    fn real_path(&self, path: &Path) -> PathBuf {
        let Ok(real) = self.to_real(path) else {
            return path.to_path_buf();
        };
        let resolved = LocalFileOps.real_path(&real);
        match resolved.strip_prefix(LocalFileOps.real_path(&self.real)) {
            Ok(rel) => Path::new(VIRTUAL).join(rel),
            Err(_) => resolved,
        }
    }
    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
        LocalFileOps.write_file(&self.to_real(path)?, data)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        LocalFileOps.create_dir_all(&self.to_real(path)?)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        LocalFileOps.read_dir(&self.to_real(path)?)
    }
    // `walk` is not overridden: the trait's default walks with `read_dir`,
    // as a backend without an ignore-aware walker of its own would.
}

impl ProcessOps for Remap {
    fn working_dir_exists(&self, cwd: &Path) -> bool {
        self.to_real(cwd).is_ok_and(|p| p.is_dir())
    }
    // The commands run here, with this machine's shells and temp dir.
    fn resolve_shell(&self, explicit: Option<&str>) -> Result<PathBuf, ToolError> {
        LocalProcessOps.resolve_shell(explicit)
    }
    fn create_output_file(&self) -> io::Result<Box<dyn OutputFile>> {
        LocalProcessOps.create_output_file()
    }
    fn exec<'a>(
        &'a self,
        mut request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>> {
        match self.to_real(&request.cwd) {
            Ok(real) => {
                request.cwd = real;
                LocalProcessOps.exec(request, on_data, cancel)
            }
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

#[tokio::test]
async fn all_seven_tools_run_over_another_backend() {
    assert!(
        !Path::new(VIRTUAL).exists(),
        "{VIRTUAL} must not exist here"
    );
    let real = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(real.path().join("src")).unwrap();
    std::fs::write(
        real.path().join("src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n",
    )
    .unwrap();
    std::fs::write(real.path().join("README.md"), "# demo\n").unwrap();
    let remap = Remap {
        real: real.path().to_path_buf(),
        seen: Arc::default(),
    };
    let ops = Operations {
        files: Arc::new(remap.clone()),
        processes: Arc::new(remap.clone()),
    };
    let set = ToolSet::new(VIRTUAL).operations(ops);
    let run = |name: &'static str, args: serde_json::Value| {
        let tool = set.tool(name).unwrap();
        async move {
            call_with(
                &tool,
                Path::new(VIRTUAL),
                args,
                ToolSettings::default(),
                CancellationToken::new(),
                agent_core::ToolUpdateSink::noop(),
            )
            .await
        }
    };

    let out = run("read", json!({"path": "src/lib.rs"})).await;
    assert_eq!(out.text, "pub fn answer() -> u32 { 42 }\n", "{}", out.text);

    let out = run("ls", json!({})).await;
    assert_eq!(out.text, "README.md\nsrc/", "{}", out.text);

    let out = run("find", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(out.text, "src/lib.rs", "{}", out.text);

    let out = run("grep", json!({"pattern": "answer"})).await;
    assert_eq!(
        out.text, "src/lib.rs:1: pub fn answer() -> u32 { 42 }",
        "{}",
        out.text
    );
    let out = run("grep", json!({"pattern": "demo", "glob": "*.md"})).await;
    assert_eq!(out.text, "README.md:1: # demo", "{}", out.text);

    let out = run(
        "write",
        json!({"path": "notes/todo.txt", "content": "ship it\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(real.path().join("notes/todo.txt")).unwrap(),
        "ship it\n"
    );

    let out = run(
        "edit",
        json!({"path": "src/lib.rs", "edits": [{"oldText": "42", "newText": "43"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        std::fs::read_to_string(real.path().join("src/lib.rs"))
            .unwrap()
            .contains("43")
    );

    let out = run("bash", json!({"command": "ls src"})).await;
    assert_eq!(out.text, "lib.rs\n", "{}", out.text);

    // Every path a tool asked about was under the virtual root.
    let seen = remap.seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|p| p.starts_with(VIRTUAL)),
        "a path outside the backend: {:?}",
        seen.iter().find(|p| !p.starts_with(VIRTUAL))
    );
}
