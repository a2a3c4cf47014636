//! Check 12: what leaves the process is typed. The code that builds a
//! provider's request body, an RPC line or a session file line serializes
//! structs, so a misspelt field is a compile error, not a silent change on
//! the wire: no `json!` outside tests in [`TYPED_WIRE`], but for the
//! listed exceptions.

use std::path::Path;

use anyhow::Result;

/// Directories whose code writes what another program reads.
pub(super) const TYPED_WIRE: &[&str] = &[
    "crates/ai/src/providers",
    "crates/rpc/src",
    "crates/sessions/src",
];

/// `(file under the root, text on the line, why)`.
pub(super) const WIRE_EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "crates/ai/src/providers/builder.rs",
    "\"_raw\"",
    "tool-call arguments a model sent that are not JSON, kept under `_raw` for validation to report: read, never sent",
)];

/// `json!` in the code of `dirs` (relative to `root`) not excused by `exceptions`.
pub(super) fn typed_wire(
    root: &Path,
    dirs: &[&str],
    exceptions: &[(&str, &str, &str)],
    problems: &mut Vec<String>,
) -> Result<()> {
    for dir in dirs {
        let base = root.join(dir);
        if !base.is_dir() {
            problems.push(format!(
                "{dir} is named in tidy's typed-wire list but does not exist"
            ));
            continue;
        }
        for (file, number, line) in super::code_lines(&base)? {
            if !line.contains("json!") {
                continue;
            }
            let path = format!("{dir}/{file}");
            let excused = exceptions
                .iter()
                .any(|(f, marker, _)| path == *f && line.contains(marker));
            if !excused {
                problems.push(format!(
                    "{path}:{number} builds wire JSON with json!: serialize a struct instead"
                ));
            }
        }
    }
    Ok(())
}
