//! The worker side: what a worker process runs.

use crate::confine;
use crate::protocol::{HostMessage, ScriptEnd, VmEvent, read_frame, write_frame};
use crate::vm::Vm;

/// Serves one script on stdin/stdout as a confined worker, then exits the
/// process. Call it from your program's `main` when it is started as a
/// worker (see [`WorkerSandbox`](crate::WorkerSandbox)); it never returns.
///
/// Exit status 0 after a script ran (however it ended), 70 when the worker
/// could not confine itself or read its script: it then runs nothing.
pub fn worker_main() -> ! {
    let code = match serve() {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("coding-agent script worker: {message}");
            70
        }
    };
    std::process::exit(code)
}

fn serve() -> Result<(), String> {
    confine::limit_process().map_err(|e| e.to_string())?;
    let vm = Vm::new().map_err(|e| e.to_string())?;
    // Taken before the filter: locking them later needs no new system calls.
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    confine::install_filter().map_err(|e| e.to_string())?;
    let request = match read_frame::<HostMessage>(&mut input) {
        Ok(Some(HostMessage::Start(request))) => request,
        Ok(Some(_)) => return Err("the first message was not a script".into()),
        // The host went away before sending a script (a warm worker at exit).
        Ok(None) => return Ok(()),
        Err(e) => return Err(format!("could not read the script: {e}")),
    };
    vm.run(
        request,
        move |event| match write_frame(&mut output, &event) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                // One item too large for a frame (escaping can make JSON six
                // times the text): the script fails, saying so, and stops.
                let _ = write_frame(
                    &mut output,
                    &VmEvent::End(ScriptEnd::Threw {
                        name: "RangeError".into(),
                        message: e.to_string(),
                        stack: format!("RangeError: {e}"),
                    }),
                );
                false
            }
            Err(_) => false,
        },
        move || read_frame::<HostMessage>(&mut input).ok().flatten(),
    );
    Ok(())
}
