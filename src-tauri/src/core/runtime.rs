//! The async runtime of each process: the watchers, Redis calls and
//! settings changes run on it, never on the main thread, which belongs to
//! the tray's or the window's event loop.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Starts the runtime (two worker threads: the app waits on Redis, it does
/// not compute) and returns its handle.
///
/// # Errors
/// The OS's, when it refuses the threads.
pub fn start() -> std::io::Result<Handle> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt.handle().clone());
    }
    let rt = Builder::new_multi_thread().worker_threads(2).thread_name("lockwatch-rt").enable_all().build()?;
    Ok(RUNTIME.get_or_init(|| rt).handle().clone())
}

/// Runs `task` on the runtime (a no-op, logged, before [`start`]).
pub fn spawn<F>(task: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    match RUNTIME.get() {
        Some(rt) => {
            rt.spawn(task);
        }
        None => tracing::error!("the async runtime is not started; a task was dropped"),
    }
}
