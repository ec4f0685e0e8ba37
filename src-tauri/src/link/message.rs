//! What one process tells the other: a [`Message`], one JSON line each, so
//! any job name or password fits one line and reads back as written.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::View;

/// What one process tells the other. Log its [`Message::kind`], never
/// the line.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Message {
    /// To the dashboard: show this view.
    Show(View),
    /// To the tray: the settings file was saved; read it again.
    SettingsSaved,
    /// To the tray: Redis took the user's own flip of `job` to `on`, at
    /// Redis time `at_ms`.
    Flipped { job: String, on: bool, at_ms: u64 },
    /// To the tray: send a test notification.
    TestNotification,
    /// To the tray, before [`Message::SettingsSaved`]: the password of the
    /// keyring account `account`, which no keyring keeps on this desktop.
    Password { account: String, password: String },
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Show(view) => f.debug_tuple("Show").field(view).finish(),
            Message::SettingsSaved => f.write_str("SettingsSaved"),
            Message::Flipped { job, on, at_ms } => {
                f.debug_struct("Flipped").field("job", job).field("on", on).field("at_ms", at_ms).finish()
            }
            Message::TestNotification => f.write_str("TestNotification"),
            Message::Password { account, .. } => {
                f.debug_struct("Password").field("account", account).finish_non_exhaustive()
            }
        }
    }
}

impl Message {
    /// The message as one line (no line break in it).
    pub fn line(&self) -> String {
        // A message is strings, numbers and booleans: JSON always writes them.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A line as [`Message::line`] writes it; `None` for any other.
    pub fn parse(line: &str) -> Option<Message> {
        serde_json::from_str(line.trim_end_matches(['\r', '\n'])).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written_on_one_line() {
        for message in [
            Message::Show(View::Live { no_tray: false }),
            Message::Show(View::Live { no_tray: true }),
            Message::Show(View::Settings),
            Message::Show(View::SwitchOff { job: "wh east".into() }),
            Message::SettingsSaved,
            Message::TestNotification,
            Message::Password { account: "alice@db:6379".into(), password: "p@ss word\n密码".into() },
            Message::Password { account: "a@b".into(), password: String::new() },
            Message::Flipped { job: "wh east 出库".into(), on: false, at_ms: 1_764_000_000_123 },
            Message::Flipped { job: "x".into(), on: true, at_ms: 0 },
        ] {
            let line = message.line();
            assert!(!line.is_empty() && !line.contains('\n'), "{line}");
            assert_eq!(Message::parse(&format!("{line}\n")), Some(message.clone()), "{line}");
        }
        for junk in [
            "",
            "show live",
            "settings",
            r#"{"flipped":{"job":"x","on":"yes","at_ms":12}}"#,
            r#"{"flipped":{"job":"x","on":true,"at_ms":"soon"}}"#,
            r#"{"show":{"view":"nowhere"}}"#,
            r#"{"password":{"account":"a"}}"#,
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
}
