//! Notifications as data: what one says and which buttons it has
//! ([`Note`], [`NoteAction`]), which events become one and when
//! ([`Notifier`], the policy: choices, mute, quiet time, incidents someone
//! is on, the user's own flips) and their words ([`note`]). No desktop, no
//! clock: showing them is [`super::notify`]'s.

mod policy;
mod words;

use lockwatch::EventKind;

use super::i18n::Tr;

pub use policy::{Notifier, OWN_FLIP_MS};
pub use words::note;

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub summary: String,
    /// Plain text: escaped for a daemon that reads markup when it is shown.
    pub body: String,
    pub critical: bool,
    /// The buttons, besides the default action (a click on the body opens the dashboard).
    pub actions: Vec<NoteAction>,
}

impl Note {
    /// A note whose only action is its default one.
    pub fn plain(summary: String, body: String) -> Note {
        Note { summary, body, critical: false, actions: Vec::new() }
    }
}

/// What a notification's button does. The id the daemon sends back is
/// built and read by this one enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteAction {
    /// Open the dashboard; also a click on the notification itself.
    Open,
    /// Mute notifications for an hour.
    Snooze,
    /// "I'm on it" for this job.
    OnIt(String),
}

impl NoteAction {
    /// The notification spec's name of the action of a click on the body.
    pub const DEFAULT_ID: &'static str = "default";

    pub fn id(&self) -> String {
        match self {
            NoteAction::Open => "open".to_owned(),
            NoteAction::Snooze => "snooze".to_owned(),
            NoteAction::OnIt(job) => format!("on-it:{job}"),
        }
    }

    /// The action an id stands for; the default action opens the dashboard.
    pub fn parse(id: &str) -> Option<NoteAction> {
        match id {
            "open" | NoteAction::DEFAULT_ID => Some(NoteAction::Open),
            "snooze" => Some(NoteAction::Snooze),
            _ => id.strip_prefix("on-it:").filter(|job| !job.is_empty()).map(|job| NoteAction::OnIt(job.to_owned())),
        }
    }

    /// The button's label.
    pub fn label(&self, tr: &Tr) -> String {
        tr.t(match self {
            NoteAction::Open => "note-action-open",
            NoteAction::Snooze => "note-action-snooze",
            NoteAction::OnIt(_) => "note-action-on-it",
        })
    }
}

/// Which events notify (the settings' choice).
pub fn default_notify_kinds() -> Vec<EventKind> {
    use EventKind::*;
    vec![
        Died,
        DataLost,
        Failover,
        Restarted,
        Conflict,
        Stalled,
        Recovered,
        Started,
        Stopped,
        Unreachable,
        Reachable,
        StandbyLost,
        StandbyBack,
    ]
}
