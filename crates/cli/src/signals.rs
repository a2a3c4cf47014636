//! SIGTERM and SIGHUP end the agent the way Ctrl-C does: the run is
//! cancelled (running tools and their process trees included), output is
//! flushed, and the process exits with 128 + the signal number.

use std::future::Future;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

/// How long cancelled work may take to wind down before the process exits anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// On SIGTERM or SIGHUP: calls `cancel`, awaits `settled` (bounded), flushes
/// and exits.
pub fn exit_on_terminate<F, W>(cancel: impl Fn() + Send + Sync + 'static, settled: F)
where
    F: Fn() -> W + Send + Sync + 'static,
    W: Future<Output = ()> + Send,
{
    let handler = std::sync::Arc::new((cancel, settled));
    for (kind, number) in [(SignalKind::terminate(), 15), (SignalKind::hangup(), 1)] {
        let Ok(mut stream) = signal(kind) else {
            tracing::warn!(signal = number, "cannot listen for the signal");
            continue;
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            if stream.recv().await.is_some() {
                (handler.0)();
                let _ = tokio::time::timeout(WIND_DOWN, (handler.1)()).await;
                use std::io::Write;
                let _ = std::io::stdout().flush();
                let _ = std::io::stderr().flush();
                agent_sandbox::shut_down();
                std::process::exit(128 + number);
            }
        });
    }
}
