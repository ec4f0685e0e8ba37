//! The app's core, the same in its two processes: what it knows
//! ([`AppState`]), the Tauri app it runs in (its plugins: the settings
//! store, start at login) and the surface that shows it ([`Surface`]): the
//! tray's icon and menu in the tray's process, the web page in the
//! dashboard's. The shared modules (supervisor, actions, notifications)
//! speak to a [`Desk`], never to a window or a menu.

use std::sync::Arc;

use serde::Serialize;
use tauri::AppHandle;

use crate::link::Message;
use crate::model::{Note, NoteAction};
use crate::notify;
use crate::state::AppState;

/// What differs between the two processes: how each shows the app state,
/// and what each does of what the other does.
pub trait Surface: Send + Sync {
    /// The state changed: show it anew (the tray redraws its menu).
    fn redraw(&self, desk: &Desk);
    /// Hands a `status` or `event` to the page (the dashboard).
    fn emit(&self, name: &str, payload: serde_json::Value);
    /// Opens the dashboard on `view` (`live`, `settings`, `off?job=…`).
    fn open(&self, desk: &Desk, view: &str);
    /// Whether this process tells the desktop of events: the tray's does;
    /// the dashboard's leaves it to the tray's, so each event is told once.
    fn notifies(&self) -> bool;
    /// Does what a click on a notification (or one of its buttons) asks.
    fn on_note(&self, desk: &Desk, action: NoteAction);
    /// Tells the tray's process what happened in this one; in the tray's
    /// own process there is nobody to tell. False when the tray is gone.
    fn tell_tray(&self, message: &Message) -> bool;
}

/// The app state and its surface; cloned freely (one allocation).
#[derive(Clone)]
pub struct Desk(Arc<Inner>);

struct Inner {
    state: AppState,
    app: AppHandle,
    surface: Box<dyn Surface>,
}

impl Desk {
    pub fn new(state: AppState, app: AppHandle, surface: impl Surface + 'static) -> Desk {
        Desk(Arc::new(Inner { state, app, surface: Box::new(surface) }))
    }

    pub fn state(&self) -> &AppState {
        &self.0.state
    }

    /// The Tauri app of this process.
    pub fn app(&self) -> &AppHandle {
        &self.0.app
    }

    /// See [`Surface::redraw`]. Never called with the state locked.
    pub fn redraw(&self) {
        self.0.surface.redraw(self);
    }

    /// See [`Surface::emit`].
    pub fn emit(&self, name: &str, payload: &impl Serialize) {
        match serde_json::to_value(payload) {
            Ok(value) => self.0.surface.emit(name, value),
            Err(err) => tracing::warn!(error = %err, name, "cannot hand this to the page"),
        }
    }

    /// See [`Surface::open`].
    pub fn open(&self, view: &str) {
        self.0.surface.open(self, view);
    }

    /// See [`Surface::notifies`].
    pub fn notifies(&self) -> bool {
        self.0.surface.notifies()
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
