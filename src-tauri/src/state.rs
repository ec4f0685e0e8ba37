//! What the app knows: the settings, what took effect, each job's latest
//! status, and the watchers that keep it live ([`crate::supervisor`]).

use std::sync::{Mutex, MutexGuard};

use lockwatch::watcher::Watcher;

use crate::i18n::{Lang, Tr, tr};
use crate::model::{JobView, Notifier};
use crate::settings::{Effective, Overrides, Settings};

/// Quiet time per (job, event kind) between two notifications.
const QUIET_MS: u64 = 60_000;

/// Everything the app knows, behind one lock held only briefly (never
/// across a wait on Redis, the keyring or another thread).
pub struct AppState {
    inner: Mutex<Inner>,
}

pub struct Inner {
    pub settings: Settings,
    pub overrides: Overrides,
    /// The desktop locale's language, read once at start.
    pub desktop_lang: Lang,
    pub effective: Option<Effective>,
    /// Why the settings cannot take effect, if they cannot.
    pub settings_error: Option<String>,
    /// One per watched job, in the order of `effective.jobs`.
    pub jobs: Vec<JobView>,
    /// One per watched job, in the same order.
    pub(crate) watchers: Vec<Watcher>,
    pub(crate) notifier: Notifier,
    /// Bumped on every restart, so tasks of an old generation stop updating.
    pub(crate) generation: u64,
    /// Whether she was told, since the settings last took effect, that
    /// Redis refused her login.
    pub(crate) told_sign_in: bool,
}

impl Inner {
    /// The language to speak: the setting's, else the desktop's.
    pub fn lang(&self) -> Lang {
        self.settings.language.resolve(self.desktop_lang)
    }

    /// The words of [`Inner::lang`].
    pub fn tr(&self) -> Tr {
        tr(self.lang())
    }
}

impl AppState {
    pub fn new(settings: Settings, overrides: Overrides, desktop_lang: Lang) -> AppState {
        let inner = Mutex::new(Inner {
            settings,
            overrides,
            desktop_lang,
            effective: None,
            settings_error: None,
            jobs: Vec::new(),
            watchers: Vec::new(),
            notifier: Notifier::new(QUIET_MS),
            generation: 0,
            told_sign_in: false,
        });
        AppState { inner }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}
