//! The link between the app's two processes. The tray's process starts
//! its own executable again with `--dashboard=<view>` when the dashboard is
//! first opened, and that process ends when its window is closed (the
//! tray's side: [`crate::dashboard_process`]; the window:
//! [`crate::dashboard`]).
//!
//! Why a process: the tray runs all day, the dashboard is looked at now and
//! then. A web view once opened keeps WebKit's web and network processes
//! (and its GL driver) for as long as its process lives; when the
//! dashboard's process exits, they go with it.
//!
//! The two talk over the child's stdin and stdout, one [`Message`] a line:
//! the tray sends the view to show (and closing stdin, by exiting, ends the
//! dashboard); the dashboard says when it saved the settings, so the tray
//! reads them again, and when Redis took the user's own flip there, so the
//! tray confirms it in its menu and does not notify them of the start or
//! stop they asked for; when they ask for a test notification, which the
//! tray, the one that notifies, sends; and, on a desktop without a keyring,
//! the password they saved, which the tray then keeps in its memory too
//! (never in a file, never on a command line; its line is never logged).
//! Everything else each reads from Redis itself.

use std::fmt;
use std::io::Write;

use crate::model::OwnFlip;

/// The argument that gives the dashboard's process its first view.
pub const ARG: &str = "--dashboard=";
/// The view that asks why a job is switched off (`off?job=NAME`).
pub const SWITCH_OFF: &str = "off?job=";
/// The argument that asks the running tray for a test notification
/// (`lockwatch-tray --test-notification`, the same as the button in Settings).
pub const TEST_NOTIFICATION_ARG: &str = "--test-notification";

/// What one process tells the other: one line each, printed by `Display`
/// and read back by [`Message::parse`]. Log its [`Message::kind`], never
/// the line.
#[derive(Clone, PartialEq, Eq)]
pub enum Message {
    /// To the dashboard: show this view (`live`, `settings`, `off?job=…`).
    Show(String),
    /// To the tray: the settings file was saved; read it again.
    SettingsSaved,
    /// To the tray: Redis took the user's own flip of `job`.
    Flipped { job: String, flip: OwnFlip },
    /// To the tray: send a test notification.
    TestNotification,
    /// To the tray, before [`Message::SettingsSaved`]: the password of the
    /// keyring account `account`, which no keyring keeps on this desktop.
    Password { account: String, password: String },
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Password { account, .. } => write!(f, "Password {{ account: {account:?}, .. }}"),
            other => write!(f, "{other}"),
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Show(view) => write!(f, "show {view}"),
            Message::SettingsSaved => f.write_str("settings"),
            Message::TestNotification => f.write_str("test-notification"),
            Message::Password { account, password } => write!(f, "password {} {}", hex(account), hex(password)),
            Message::Flipped { job, flip } => write!(f, "flipped {} {} {job}", u8::from(flip.on), flip.at_ms),
        }
    }
}

impl Message {
    /// A line as [`Display`](fmt::Display) prints it; `None` for any other.
    pub fn parse(line: &str) -> Option<Message> {
        let line = line.trim_end_matches(['\r', '\n']);
        match line {
            "settings" => return Some(Message::SettingsSaved),
            "test-notification" => return Some(Message::TestNotification),
            _ => {}
        }
        if let Some(view) = line.strip_prefix("show ") {
            return (!view.trim().is_empty()).then(|| Message::Show(view.trim().to_owned()));
        }
        if let Some(rest) = line.strip_prefix("password ") {
            let (account, password) = rest.split_once(' ')?;
            return Some(Message::Password { account: unhex(account)?, password: unhex(password)? });
        }
        let mut parts = line.strip_prefix("flipped ")?.splitn(3, ' ');
        let on = match parts.next()? {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        let at_ms = parts.next()?.parse().ok()?;
        let job = parts.next().filter(|j| !j.is_empty())?;
        Some(Message::Flipped { job: job.to_owned(), flip: OwnFlip { on, at_ms } })
    }

    /// What kind of message it is, for a log line.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Show(_) => "show",
            Message::SettingsSaved => "settings",
            Message::Flipped { .. } => "flipped",
            Message::TestNotification => "test-notification",
            Message::Password { .. } => "password",
        }
    }
}

/// `text`'s bytes in hex: any password fits one line.
fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(hex: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The view to open first, from the dashboard's command line.
pub fn dashboard_arg() -> Option<String> {
    std::env::args().skip(1).find_map(|a| a.strip_prefix(ARG).map(str::to_owned))
}

/// The dashboard's side: tells the tray `message` on stdout; false (and
/// logged) when the tray is gone.
pub fn tell_tray(message: &Message) -> bool {
    let mut out = std::io::stdout().lock();
    let told = writeln!(out, "{message}").and_then(|()| out.flush()).is_ok();
    if !told {
        tracing::warn!(
            message = message.kind(),
            "the tray app is gone; it reads the settings and flags anew at its next start"
        );
    }
    told
}

/// The dashboard's side: the tray's messages on stdin, until it goes.
pub fn from_tray() -> impl Iterator<Item = Message> {
    std::io::stdin().lines().map_while(Result::ok).filter_map(|line| Message::parse(&line))
}

/// The view asking why `job` is switched off.
pub fn switch_off_view(job: &str) -> String {
    format!("{SWITCH_OFF}{}", query_escaped(job))
}

/// `text` safe in a URL's query (job names are few characters, but may hold `:`).
fn query_escaped(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written() {
        let flip = OwnFlip { on: false, at_ms: 1_764_000_000_123 };
        for message in [
            Message::Show("live".into()),
            Message::Show(switch_off_view("wh east")),
            Message::SettingsSaved,
            Message::TestNotification,
            Message::Password { account: "alice@db:6379".into(), password: "p@ss word\n密码".into() },
            Message::Password { account: "a@b".into(), password: String::new() },
            Message::Flipped { job: "wh east 出库".into(), flip },
            Message::Flipped { job: "x".into(), flip: OwnFlip { on: true, at_ms: 0 } },
        ] {
            assert_eq!(Message::parse(&message.to_string()), Some(message.clone()), "{message}");
        }
        for junk in [
            "",
            "show ",
            "flipped 1 12 ",
            "flipped yes 12 outbound",
            "flipped 1 soon outbound",
            "live",
            "password zz 00",
            "password 61",
        ] {
            assert_eq!(Message::parse(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn a_password_is_never_in_a_log_line() {
        let message = Message::Password { account: "alice@db:6379".into(), password: "hunter2".into() };
        assert!(!format!("{message:?}").contains("hunter2"), "{message:?}");
        assert!(format!("{message:?}").contains("alice@db:6379"));
        assert_eq!(message.kind(), "password");
    }

    #[test]
    fn a_job_name_travels_in_the_url_intact() {
        assert_eq!(switch_off_view("outbound"), "off?job=outbound");
        assert_eq!(query_escaped("wh:a b&c"), "wh%3Aa%20b%26c");
        assert_eq!(query_escaped("出"), "%E5%87%BA");
        for job in ["outbound", "wh:a b&c", "出库", "100%"] {
            assert_eq!(lockwatch::address::percent_decode(&query_escaped(job)), job);
        }
        assert_eq!(lockwatch::address::percent_decode("50%zz"), "50%zz");
    }
}
