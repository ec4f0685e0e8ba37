//! The log: `lockwatch.log` in the app's log directory (Tauri's
//! `app_log_dir`: `~/.local/share/app.lockwatch.tray/logs/` on Linux; both
//! processes append to it) and stderr; `LOCKWATCH_LOG` filters it like
//! `RUST_LOG` (default `info`).

use tracing_subscriber::fmt::writer::MakeWriterExt;

/// Starts logging into `dir` and stderr; without a `dir`, or a log file
/// that cannot be opened, to stderr alone.
pub fn init(dir: Option<std::path::PathBuf>) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOCKWATCH_LOG").unwrap_or_else(|_| "info".into());
    let file = dir.and_then(|dir| {
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::OpenOptions::new().create(true).append(true).open(dir.join("lockwatch.log")).ok()
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    let _ = match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file).and(std::io::stderr)).try_init(),
        None => builder.with_writer(std::io::stderr).try_init(),
    };
}
