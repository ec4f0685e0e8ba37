//! The core as each process holds it: what the app knows ([`AppState`]),
//! where its settings are kept ([`SettingsFile`]) and the process's own face
//! ([`Surface`]): the tray's icon, menu and notifications in the tray's
//! process, the web page in the dashboard's. The core's modules (watchers,
//! actions) speak to a [`Desk`], never to a window, a menu or the toolkit.

use std::sync::Arc;

use lockwatch::Event;

use super::notes::{Note, NoteAction};
use super::notify;
use super::settings::Settings;
use super::state::{AppState, JobState};
use crate::link::{Message, View};

/// What each process does with what the core learns and wants shown.
pub trait Surface: Send + Sync {
    /// The app state changed (settings took effect, a flip's outcome, the
    /// mute): show it anew.
    fn redraw(&self, desk: &Desk);
    /// A job's status changed: `job` is what is now known of it, `user` the
    /// supervisor it is shown to.
    fn status(&self, desk: &Desk, job: &JobState, user: &str);
    /// Something happened to a job.
    fn event(&self, desk: &Desk, event: &Event);
    /// Opens the dashboard on `view`.
    fn open(&self, desk: &Desk, view: View);
    /// Does what a click on a notification (or one of its buttons) asks.
    fn on_note(&self, desk: &Desk, action: NoteAction);
    /// Tells the tray's process what happened in this one; in the tray's
    /// own process there is nobody to tell. False when the tray is gone.
    fn tell_tray(&self, message: &Message) -> bool;
}

/// Where the settings are kept (both processes read and write one file).
pub trait SettingsFile: Send + Sync {
    /// The settings as saved, read anew.
    fn load(&self) -> Settings;
    /// Saves `settings`; says whether they were (a failure is logged).
    fn save(&self, settings: &Settings) -> bool;
}

/// The app state, its settings file and its surface; cloned freely (one allocation).
#[derive(Clone)]
pub struct Desk(Arc<Inner>);

struct Inner {
    state: AppState,
    file: Box<dyn SettingsFile>,
    surface: Box<dyn Surface>,
}

impl Desk {
    pub fn new(state: AppState, file: impl SettingsFile + 'static, surface: impl Surface + 'static) -> Desk {
        Desk(Arc::new(Inner { state, file: Box::new(file), surface: Box::new(surface) }))
    }

    pub fn state(&self) -> &AppState {
        &self.0.state
    }

    /// Where the settings are kept.
    pub fn settings_file(&self) -> &dyn SettingsFile {
        &*self.0.file
    }

    /// See [`Surface::redraw`]. Never called with the state locked.
    pub fn redraw(&self) {
        self.0.surface.redraw(self);
    }

    /// See [`Surface::status`]. Never called with the state locked.
    pub fn status(&self, job: &JobState, user: &str) {
        self.0.surface.status(self, job, user);
    }

    /// See [`Surface::event`]. Never called with the state locked.
    pub fn event(&self, event: &Event) {
        self.0.surface.event(self, event);
    }

    /// See [`Surface::open`].
    pub fn open(&self, view: View) {
        self.0.surface.open(self, view);
    }

    /// See [`Surface::on_note`].
    pub fn on_note(&self, action: NoteAction) {
        self.0.surface.on_note(self, action);
    }

    /// Shows `note` in the app's language and with the sound as set; its
    /// clicks come back to [`Desk::on_note`]. Never on the main thread (it
    /// takes the app state).
    pub fn tell(&self, note: &Note) {
        let (tr, style) = {
            let inner = self.state().lock();
            (inner.tr(), notify::Style { sound: inner.settings.sound })
        };
        let clicked = self.clone();
        notify::show(note, &tr, style, move |action| clicked.on_note(action));
    }

    /// See [`Surface::tell_tray`].
    pub fn tell_tray(&self, message: &Message) -> bool {
        self.0.surface.tell_tray(message)
    }
}
