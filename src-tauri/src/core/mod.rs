//! The app's core, the same in its two processes, knowing no toolkit (no
//! window, menu or Tauri type): what the app knows, its settings, its
//! words, the watchers, what the user can do, the notification policy and
//! the desktop's notifications. Each process's own part (`tray`,
//! `dashboard`) builds on it and is asked, through [`desk::Surface`], only
//! to show; what a status or an event means is the library's rule.
//!
//! # Layout
//! In the order they build on each other:
//! - [`clock`]: the desktop's clock, for the mute and notifications only.
//! - [`runtime`], [`logging`]: each process's async runtime and log.
//! - [`i18n`]: the words in English and Simplified Chinese (one Fluent catalog).
//! - [`passwords`]: the OS keyring, or memory where there is none.
//! - [`notes`]: notifications as data, and which events become one (the policy).
//! - [`notify`]: desktop notifications shown, their clicks handed back.
//! - [`settings`]: stored settings, the machine's defaults, environment
//!   overrides, the settings form, what takes effect.
//! - [`error`]: the app's one error type, as the page reads it.
//! - [`refusal`]: a write of the user's own key that Redis refused, said two ways.
//! - [`state`]: what the app knows, one [`state::WatchedJob`] per job.
//! - [`desk`]: the state, the settings file and the process's surface.
//! - [`watchers`]: one watcher per job, its news carried into the app.
//! - [`actions`]: flip, "on it", mute, settings changes (saved and applied
//!   once), a notification's click.

pub mod actions;
pub mod clock;
pub mod desk;
pub mod error;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod i18n;
pub mod logging;
pub mod notes;
pub mod notify;
pub mod passwords;
pub mod refusal;
pub mod runtime;
pub mod settings;
pub mod state;
pub mod watchers;
