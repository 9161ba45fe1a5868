//! The stop signals of long commands: Ctrl-C (SIGINT), SIGTERM (a job scheduler) and SIGHUP.

use anyhow::Context as _;

/// Resolves on the first Ctrl-C (SIGINT), SIGTERM (a job scheduler stopping the run) or SIGHUP
/// (the terminal closed). The handlers are installed now, before the returned future is polled.
#[cfg(unix)]
pub fn stop_signals() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind| signal(kind).context("cannot watch for stop signals");
    let mut interrupt = watch(SignalKind::interrupt())?;
    let mut terminate = watch(SignalKind::terminate())?;
    let mut hangup = watch(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
    })
}

/// Resolves on Ctrl-C; never, when it cannot be watched.
#[cfg(not(unix))]
pub fn stop_signals() -> anyhow::Result<impl Future<Output = ()>> {
    Ok(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
