//! The app's core, the same in its two processes: what it knows
//! ([`AppState`]), the Tauri app it runs in (its plugins: the settings
//! store, start at login) and the surface that shows it ([`Surface`]): the
//! tray's icon and menu in the tray's process, the web page in the
//! dashboard's. The shared modules (supervisor, actions, notifications)
//! speak to a [`Desk`], never to a window or a menu.

use std::sync::Arc;

use serde::Serialize;
use tauri::AppHandle;

use crate::state::AppState;

/// What shows the app state, per process.
pub trait Surface: Send + Sync {
    /// The state changed: show it anew (the tray redraws its menu).
    fn redraw(&self, desk: &Desk);
    /// Hands a `status` or `event` to the page (the dashboard).
    fn emit(&self, name: &str, payload: serde_json::Value);
    /// Opens the dashboard on `view` (`live`, `settings`, `off?job=…`).
    fn open(&self, desk: &Desk, view: &str);
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
}
