//! What the app knows: the settings, what took effect, and each watched
//! job ([`WatchedJob`]): its keys, its watcher, its latest status and the
//! outcome of the user's own writes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use lockwatch::watcher::{self, Watcher};
use lockwatch::{Keys, Status};

use super::i18n::{Lang, Tr, tr};
use super::notes::Notifier;
use super::refusal::Refusal;
use super::settings::{Effective, Overrides, Settings};

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
    /// The connection and user that took effect; its jobs are in [`Inner::jobs`].
    pub effective: Option<Effective>,
    /// Why the settings cannot take effect, if they cannot.
    pub settings_error: Option<String>,
    /// The watched jobs, in the settings' order (the menu's).
    pub jobs: Vec<WatchedJob>,
    pub(crate) notifier: Notifier,
    /// Bumped by every restart of the watchers: one that waited on the
    /// keyring while a newer one began leaves the jobs to the newer one.
    pub(crate) restarts: u64,
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

    /// The supervisor the settings name (empty while they cannot take effect).
    pub fn user(&self) -> String {
        self.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default()
    }

    /// The watched job named `job`.
    pub fn job(&self, job: &str) -> Option<&WatchedJob> {
        self.jobs.iter().find(|j| j.keys.job == job)
    }

    /// The watched job named `job`, to change what is known of it.
    pub fn job_mut(&mut self, job: &str) -> Option<&mut WatchedJob> {
        self.jobs.iter_mut().find(|j| j.keys.job == job)
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
            notifier: Notifier::new(QUIET_MS),
            restarts: 0,
            told_sign_in: false,
        });
        AppState { inner }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Which watched job a task follows: its own, never a later one of the
/// same name (the settings may have been applied again meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobId(u64);

impl JobId {
    fn next() -> JobId {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        JobId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// One watched job: where it is, the watcher that keeps its status live,
/// and what is known of it.
pub struct WatchedJob {
    pub id: JobId,
    pub keys: Keys,
    /// How it is watched (the engine's timing judges its history too).
    pub options: watcher::Options,
    pub(crate) watcher: Watcher,
    pub known: JobState,
}

impl WatchedJob {
    /// Starts watching each of `jobs` on the connection `target`, all on
    /// one set of connections.
    pub fn spawn_all(target: lockwatch::connect::Target, jobs: Vec<(Keys, watcher::Options)>) -> Vec<WatchedJob> {
        let watchers = Watcher::spawn_all(target, jobs.clone());
        jobs.into_iter()
            .zip(watchers)
            .map(|((keys, options), watcher)| {
                let known = JobState { job: keys.job.clone(), ..JobState::default() };
                WatchedJob { id: JobId::next(), keys, options, watcher, known }
            })
            .collect()
    }
}

/// What is known of one watched job, as the tray and the page show it.
#[derive(Debug, Clone, Default)]
pub struct JobState {
    pub job: String,
    /// Latest status; `None` before the first read.
    pub status: Option<Status>,
    /// Why the last write of the user's own key failed, until the next success.
    pub flip_error: Option<Refusal>,
    /// The user's own last flip that Redis took, confirmed in the menu.
    pub own_flip: Option<OwnFlip>,
}

/// A flip of the user's own flag that Redis took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnFlip {
    pub on: bool,
    /// Redis time of the flip, ms.
    pub at_ms: u64,
}
