//! The dashboard's side of the link: its first view from the command line,
//! the tray's messages on stdin, its own on stdout.

use std::io::Write;

use super::{ARG, Message, View};

/// The view to open first, when this process is the dashboard's
/// (`--dashboard=<view>`; a view it does not know opens the live one).
pub fn dashboard_arg() -> Option<View> {
    std::env::args().skip(1).find_map(|a| a.strip_prefix(ARG).map(|v| View::from_arg(v).unwrap_or_default()))
}

/// Tells the tray `message` on stdout; false (and logged) when the tray is gone.
pub fn tell_tray(message: &Message) -> bool {
    let mut out = std::io::stdout().lock();
    let told = writeln!(out, "{}", message.line()).and_then(|()| out.flush()).is_ok();
    if !told {
        tracing::warn!(
            message = message.kind(),
            "the tray app is gone; it reads the settings and flags anew at its next start"
        );
    }
    told
}

/// The tray's messages on stdin, until it goes.
pub fn from_tray() -> impl Iterator<Item = Message> {
    std::io::stdin().lines().map_while(Result::ok).filter_map(|line| Message::parse(&line))
}
