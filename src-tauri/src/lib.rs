//! The lockwatch tray app: the job's state at a glance in the tray, the
//! user's own enable flag in its menu, a notification when the job dies or
//! moves, and a dashboard window on demand. The logic lives in the
//! `lockwatch` library; this crate adds the desktop, a Tauri 2 app in two
//! processes of one executable: the tray's (`lockwatch-tray`, no window,
//! runs all day) and the dashboard's (`lockwatch-tray --dashboard=<view>`,
//! its web view, runs while its window is open).
//!
//! # Layout
//! Each process's own part builds on the shared ones, never the other way
//! round (`python3 scripts/module-cycles.py src-tauri/src` checks it):
//! - [`link`]: the two processes' one talk ([`link::Message`]) and the
//!   views the dashboard shows ([`link::View`]); a leaf.
//! - [`core`]: what both processes share, knowing no toolkit: the state
//!   (one [`core::state::WatchedJob`] per job), settings, words, watchers,
//!   actions, the notification policy and the desktop's notifications.
//! - [`store`]: the settings file (tauri-plugin-store), the one piece of
//!   the toolkit both processes share.
//! - [`tray`]: the tray's process: start, icon and menu, its clicks, the
//!   dashboard's process started and heard.
//! - [`dashboard`]: the dashboard's process: start, its windows, the page's
//!   commands and what the page is handed.

pub mod core;
pub mod dashboard;
pub mod link;
pub mod store;
pub mod tray;

/// The app's Tauri configuration and its page, built in once for both processes.
pub(crate) fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!()
}
