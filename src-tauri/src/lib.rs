//! The lockwatch tray app: the job's state at a glance in the tray, the
//! user's own enable flag in its menu, a notification when the job dies or
//! moves, and a dashboard window on demand. The logic lives in the
//! `lockwatch` library; this crate adds the desktop, a Tauri 2 app in two
//! processes of one executable: the tray's (`lockwatch-tray`, no window,
//! runs all day) and the dashboard's (`lockwatch-tray --dashboard=<view>`,
//! its web view, runs while its window is open).
//!
//! # Layout
//! Shared by both processes, and knowing no window or menu (in the order
//! they build on each other):
//! - [`clock`]: the desktop's clock, for the mute and notifications only.
//! - [`i18n`]: the words in English and Simplified Chinese (one Fluent catalog).
//! - [`menu_id`]: the menu items' ids, built and parsed by one enum.
//! - [`model`]: the tray as pure data (icon, menu lines, tooltip, notification policy).
//! - [`settings`]: stored settings, the settings form, environment overrides.
//! - [`passwords`]: the OS keyring, or memory where there is none.
//! - [`state`]: what the app knows (settings, statuses, watchers).
//! - [`notify`]: desktop notifications, their clicks handed back.
//! - [`link`]: the two processes' one talk ([`link::Message`]).
//! - [`desk`]: the app state and what differs per process ([`desk::Surface`]), as the modules below see them.
//! - [`site`]: the machine's defaults an admin pushes, beneath each user's own settings.
//! - [`store`]: the settings file (tauri-plugin-store), kept safe from a crash mid-write.
//! - [`watchers`]: one watcher per job, its news carried into the app.
//! - [`actions`]: flip, mute, start at login, settings changes (saved and applied once), a notification's click.
//! - [`runtime`], [`logging`]: each process's async runtime and log.
//!
//! The tray's process: [`tray_app`] (start, plugins, menu clicks), [`tray`]
//! (icon and menu), [`tray_host`] (is there a tray), [`dashboard_process`]
//! (the dashboard's process, started and heard).
//!
//! The dashboard's process: [`dashboard`] (start, the window), [`dialog`]
//! (the small window asking the last one why they switch off), [`commands`]
//! (the page's thin Tauri commands).

pub mod actions;
pub mod clock;
pub mod commands;
pub mod dashboard;
pub mod dashboard_process;
pub mod desk;
pub mod dialog;
pub mod i18n;
pub mod link;
pub mod logging;
pub mod menu_id;
pub mod model;
pub mod notify;
pub mod passwords;
pub mod runtime;
pub mod settings;
pub mod site;
pub mod start_at_login;
pub mod state;
pub mod store;
pub mod toast_id;
pub mod tray;
pub mod tray_app;
pub mod tray_host;
pub mod watchers;
pub mod webview_runtime;

/// The app's Tauri configuration and its page, built in once for both processes.
pub(crate) fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!()
}
