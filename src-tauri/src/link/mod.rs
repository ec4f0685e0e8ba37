//! The link between the app's two processes, and what the page is told to
//! show. The tray's process starts its own executable again with
//! `--dashboard=<view>` when the dashboard is first opened, and that process
//! ends when its window is closed (the tray's side:
//! `tray::dashboard_process`; the window: `dashboard`).
//!
//! Why a process: the tray runs all day, the dashboard is looked at now and
//! then. A web view once opened keeps WebKit's web and network processes
//! (and its GL driver) for as long as its process lives; when the
//! dashboard's process exits, they go with it.
//!
//! The two talk over the child's stdin and stdout, one [`Message`] a line
//! (JSON): the tray sends the [`View`] to show (and closing stdin, by
//! exiting, ends the dashboard); the dashboard says when it saved the
//! settings, so the tray reads them again, and when Redis took the user's
//! own flip there, so the tray confirms it in its menu and does not notify
//! them of the start or stop they asked for; when they ask for a test
//! notification, which the tray, the one that notifies, sends; and, on a
//! desktop without a keyring, the password they saved, which the tray then
//! keeps in its memory too (never in a file, never on a command line; its
//! line is never logged). Everything else each reads from Redis itself.
//!
//! A leaf: it knows nothing of the rest of the app, which all builds on it.
//!
//! # Layout
//! - [`message`]: what one process tells the other.
//! - [`view`]: what the dashboard shows, as the tray asks for it and the page reads it.
//! - [`pipe`]: the dashboard's side of the pipe, and its command line.

pub mod message;
pub mod pipe;
pub mod view;

pub use message::Message;
pub use view::View;

/// The argument that gives the dashboard's process its first view.
pub const ARG: &str = "--dashboard=";
/// The argument that asks the running tray for a test notification
/// (`lockwatch-tray --test-notification`, the same as the button in Settings).
pub const TEST_NOTIFICATION_ARG: &str = "--test-notification";
