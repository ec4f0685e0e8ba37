//! How the worker process protects itself and its job: stop signals heard
//! from the first moment, and a process no job can read secrets from.

use std::future::Future;

use crate::error::Error;

/// Listens for SIGTERM and SIGINT from this call on, not from the first
/// poll as `tokio::signal` futures do: a stop request that arrives while the
/// worker connects or acquires must not take the default action, which
/// kills the worker without stopping its job cleanly or releasing the lock.
/// The future completes on the first of them, logging the signal and
/// `then`, what the process does now.
///
/// # Errors
/// [`Error::Signal`] when the signal handlers cannot be installed.
pub fn stop_signals(then: &'static str) -> Result<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>, Error> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind: SignalKind, name: &'static str| {
            signal(kind).map_err(|e| Error::Signal { signal: name, cause: e.to_string() })
        };
        let mut term = install(SignalKind::terminate(), "SIGTERM")?;
        let mut int = install(SignalKind::interrupt(), "SIGINT")?;
        Ok(Box::pin(async move {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!("{name} received: {then}");
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(async move {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("Ctrl-C received: {then}");
        }))
    }
}

/// Makes this process non-dumpable, so that only root (with
/// `CAP_SYS_PTRACE`) can read its `/proc/<pid>/environ` and memory: a job
/// running as the same user reads no password there.
pub fn hide_from_jobs() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_DUMPABLE) only changes this process's own
        // dumpable flag; it takes no pointers.
        let failed = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0;
        if failed {
            let err = std::io::Error::last_os_error();
            tracing::warn!(error = %err, "cannot make the worker non-dumpable; a job could read its environment");
        }
    }
}
