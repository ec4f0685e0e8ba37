//! The app's settings: kept with tauri-plugin-store (never the password: that
//! goes to the OS keyring, or stays in memory where there is none), overridden
//! by environment variables for managed desktops, and turned into what the
//! watchers need. A corrupt settings file is set aside, not lost.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use lockwatch::connect::{DEFAULT_URL, Target};
use lockwatch::keys::{DEFAULT_JOB, Keys};
use lockwatch::status;
use lockwatch::watch;
use lockwatch::{EventKind, flags};
use serde::{Deserialize, Serialize};

use crate::model::default_notify_kinds;

/// Store file name, in the app's data dir.
pub const STORE_FILE: &str = "settings.json";
/// The key holding the settings object in the store.
pub const STORE_KEY: &str = "settings";
const KEYRING_SERVICE: &str = "lockwatch";
/// How long to wait for the OS keyring before going on without it.
const KEYRING_PATIENCE: Duration = Duration::from_secs(2);

/// What the user can set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Redis URL without password.
    pub redis_url: String,
    /// PEM file of a private CA for `rediss://`.
    pub tls_ca: Option<String>,
    /// Supervisor name; empty: the URL's ACL user, else the login name.
    pub user: String,
    pub jobs: Vec<JobSettings>,
    pub poll_ms: u64,
    pub heartbeat_grace_ms: u64,
    pub failover_window_ms: u64,
    pub start_grace_ms: u64,
    /// Events that raise a notification.
    pub notify: Vec<EventKind>,
    /// Desktop time (ms) until which notifications are muted.
    pub mute_until_ms: Option<u64>,
    pub autostart: bool,
}

/// One watched job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobSettings {
    pub name: String,
    /// Lock key when not `{name}:lock`.
    pub lock_key: Option<String>,
    /// Off for services that write no heartbeat.
    pub heartbeats: bool,
}

impl Default for JobSettings {
    fn default() -> Self {
        JobSettings { name: DEFAULT_JOB.to_owned(), lock_key: None, heartbeats: true }
    }
}

impl Default for Settings {
    fn default() -> Self {
        let engine = status::Config::default();
        Settings {
            redis_url: DEFAULT_URL.to_owned(),
            tls_ca: None,
            user: String::new(),
            jobs: vec![JobSettings::default()],
            poll_ms: 1_000,
            heartbeat_grace_ms: engine.heartbeat_grace_ms,
            failover_window_ms: engine.failover_window_ms,
            start_grace_ms: engine.start_grace_ms,
            notify: default_notify_kinds(),
            mute_until_ms: None,
            autostart: false,
        }
    }
}

/// Settings as they take effect: store, then environment overrides, then
/// the password from the keyring.
#[derive(Clone)]
pub struct Effective {
    pub target: Target,
    /// The URL to show: never with a password.
    pub shown_url: String,
    pub user: String,
    /// Each job's keys and watcher settings.
    pub jobs: Vec<(Keys, watch::Options)>,
    pub notify: Vec<EventKind>,
    /// Set when something about the settings should be told once.
    pub warning: Option<String>,
}

/// Environment overrides, read once: `LOCKWATCH_REDIS_URL`, `LOCKWATCH_USER`,
/// `LOCKWATCH_JOB`, `LOCKWATCH_LOCK_KEY`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub redis_url: Option<String>,
    pub user: Option<String>,
    pub job: Option<String>,
    pub lock_key: Option<String>,
}

impl Overrides {
    pub fn from_env() -> Overrides {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Overrides {
            redis_url: var("LOCKWATCH_REDIS_URL"),
            user: var("LOCKWATCH_USER"),
            job: var("LOCKWATCH_JOB"),
            lock_key: var("LOCKWATCH_LOCK_KEY"),
        }
    }
}

impl Settings {
    /// Checks each field; returns `(field, sentence)` for every bad one.
    pub fn validate(&self) -> Vec<(String, String)> {
        let mut bad = Vec::new();
        if let Err(e) = Target::new(&self.redis_url, None) {
            bad.push(("redis_url".to_owned(), e.to_string()));
        }
        if !self.user.is_empty()
            && let Err(e) = flags::check_user(&self.user)
        {
            bad.push(("user".to_owned(), e.to_string()));
        }
        if self.jobs.is_empty() {
            bad.push(("jobs".to_owned(), "watch at least one job".to_owned()));
        }
        for (i, job) in self.jobs.iter().enumerate() {
            if job.name.trim().is_empty() || job.name.contains(['{', '}', ' ']) {
                bad.push((
                    format!("jobs.{i}.name"),
                    format!("the job name {:?} cannot be used; use letters, digits, '-', '_' or '.'", job.name),
                ));
            }
        }
        for (field, value, min) in [
            ("poll_ms", self.poll_ms, 100),
            ("heartbeat_grace_ms", self.heartbeat_grace_ms, 500),
            ("failover_window_ms", self.failover_window_ms, 0),
            ("start_grace_ms", self.start_grace_ms, 0),
        ] {
            if value < min || value > 3_600_000 {
                bad.push((field.to_owned(), format!("{value} ms is out of range; give {min} ms to 1 h")));
            }
        }
        bad
    }

    /// What takes effect, with `overrides` and the keyring's password.
    ///
    /// # Errors
    /// A sentence when the URL or CA file cannot be used.
    pub fn effective(&self, overrides: &Overrides, keyring: &dyn PasswordStore) -> Result<Effective, String> {
        let mut warning = None;
        let url = match &overrides.redis_url {
            Some(url) => url.clone(),
            None => {
                let base = Target::new(&self.redis_url, None).map_err(|e| e.to_string())?;
                let account = account(base.user(), base.host());
                match keyring.get(&account) {
                    Ok(Some(password)) => with_password(&self.redis_url, &password),
                    Ok(None) => self.redis_url.clone(),
                    Err(e) => {
                        warning = Some(format!(
                            "no OS keyring ({e}); a password is kept in memory only, or give it in LOCKWATCH_REDIS_URL"
                        ));
                        self.redis_url.clone()
                    }
                }
            }
        };
        let target = Target::new(&url, self.tls_ca.as_deref().map(std::path::Path::new)).map_err(|e| e.to_string())?;
        let user = overrides
            .user
            .clone()
            .or_else(|| (!self.user.is_empty()).then(|| self.user.clone()))
            .map_or_else(|| flags::default_user(target.user()).map_err(|e| e.to_string()), Ok)?;
        let engine = status::Config {
            heartbeat_grace_ms: self.heartbeat_grace_ms,
            failover_window_ms: self.failover_window_ms,
            start_grace_ms: self.start_grace_ms,
            ..status::Config::default()
        };
        let options = |heartbeats: bool| watch::Options {
            poll: Duration::from_millis(self.poll_ms),
            engine: status::Config { heartbeats, ..engine.clone() },
            ..watch::Options::default()
        };
        let jobs = match &overrides.job {
            Some(job) => vec![(keys(job, overrides.lock_key.as_deref()), options(true))],
            None => self
                .jobs
                .iter()
                .map(|j| {
                    (keys(&j.name, overrides.lock_key.as_deref().or(j.lock_key.as_deref())), options(j.heartbeats))
                })
                .collect(),
        };
        Ok(Effective {
            target,
            shown_url: lockwatch::connect::redact(&url),
            user,
            jobs,
            notify: self.notify.clone(),
            warning,
        })
    }
}

fn keys(job: &str, lock_key: Option<&str>) -> Keys {
    let keys = Keys::new(job);
    match lock_key {
        Some(lock) => keys.with_lock_key(lock),
        None => keys,
    }
}

/// The keyring account of a Redis login: `user@host:port`.
pub fn account(user: Option<&str>, host: &str) -> String {
    format!("{}@{host}", user.unwrap_or("default"))
}

/// `url` with `password` put in; the URL given must have none.
pub fn with_password(url: &str, password: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let encoded: String = password
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    match rest.rsplit_once('@') {
        Some((user, host)) => format!("{scheme}://{user}:{encoded}@{host}"),
        None => format!("{scheme}://:{encoded}@{rest}"),
    }
}

/// Splits a password out of a URL the user typed: `(url without it, password)`.
pub fn split_password(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), None) };
    let Some((creds, host)) = rest.rsplit_once('@') else { return (url.to_owned(), None) };
    match creds.split_once(':') {
        Some((user, password)) if !password.is_empty() => {
            let user_part = if user.is_empty() { String::new() } else { format!("{user}@") };
            (format!("{scheme}://{user_part}{host}"), Some(password.to_owned()))
        }
        _ => (url.to_owned(), None),
    }
}

/// Where passwords live.
pub trait PasswordStore: Send + Sync {
    /// # Errors
    /// A sentence when the store cannot be used at all.
    fn get(&self, account: &str) -> Result<Option<String>, String>;
    /// # Errors
    /// A sentence when the store cannot be used at all.
    fn set(&self, account: &str, password: &str) -> Result<(), String>;
}

/// The app's password store: the OS keyring (Secret Service on Linux), and
/// where there is none, this process's memory (the password is then asked
/// again after a restart, or taken from `LOCKWATCH_REDIS_URL`).
pub static KEYRING: LazyLock<Keyring> = LazyLock::new(Keyring::default);

#[derive(Default)]
pub struct Keyring {
    memory: Mutex<HashMap<String, String>>,
}

impl PasswordStore for Keyring {
    fn get(&self, account: &str) -> Result<Option<String>, String> {
        let remembered = self.memory.lock().unwrap_or_else(|p| p.into_inner()).get(account).cloned();
        if remembered.is_some() {
            return Ok(remembered);
        }
        // A locked keyring may answer with an unlock prompt nobody sees (or
        // never answer): ask from a thread and give up after a while.
        let (tx, rx) = std::sync::mpsc::channel();
        let account = account.to_owned();
        std::thread::spawn(move || {
            let result = keyring::Entry::new(KEYRING_SERVICE, &account).and_then(|e| e.get_password());
            let _ = tx.send(result);
        });
        match rx.recv_timeout(KEYRING_PATIENCE) {
            Ok(Ok(p)) => Ok(Some(p)),
            Ok(Err(keyring::Error::NoEntry)) => Ok(None),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("the keyring did not answer within {KEYRING_PATIENCE:?} (locked?)")),
        }
    }

    fn set(&self, account: &str, password: &str) -> Result<(), String> {
        let saved = keyring::Entry::new(KEYRING_SERVICE, account).and_then(|e| e.set_password(password));
        if saved.is_err() {
            self.memory.lock().unwrap_or_else(|p| p.into_inner()).insert(account.to_owned(), password.to_owned());
        }
        saved.map_err(|e| format!("no OS keyring ({e}); the password is kept in memory until lockwatch quits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Memory(Mutex<HashMap<String, String>>);
    impl PasswordStore for Memory {
        fn get(&self, account: &str) -> Result<Option<String>, String> {
            Ok(self.0.lock().unwrap().get(account).cloned())
        }
        fn set(&self, account: &str, password: &str) -> Result<(), String> {
            self.0.lock().unwrap().insert(account.into(), password.into());
            Ok(())
        }
    }
    struct NoKeyring;
    impl PasswordStore for NoKeyring {
        fn get(&self, _: &str) -> Result<Option<String>, String> {
            Err("no Secret Service on the session bus".into())
        }
        fn set(&self, _: &str, _: &str) -> Result<(), String> {
            Err("no Secret Service on the session bus".into())
        }
    }

    #[test]
    fn the_password_comes_from_the_keyring_and_is_never_shown() {
        let store = Memory(Mutex::new(HashMap::from([("alice@db:6379".to_owned(), "p@ss w".to_owned())])));
        let s = Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() };
        let e = s.effective(&Overrides::default(), &store).unwrap();
        assert_eq!(e.user, "alice");
        assert_eq!(e.shown_url, "redis://alice:***@db:6379");
        assert_eq!(with_password("redis://alice@db:6379", "p@ss w"), "redis://alice:p%40ss%20w@db:6379");
    }

    #[test]
    fn environment_overrides_the_store_and_the_user_order_holds() {
        let s = Settings { redis_url: "redis://alice@db:6379".into(), user: "carol".into(), ..Settings::default() };
        let o = Overrides {
            redis_url: Some("redis://bob:pw@other:7000".into()),
            user: None,
            job: Some("inbound".into()),
            lock_key: Some("inLock".into()),
        };
        let e = s.effective(&o, &NoKeyring).unwrap();
        assert_eq!(e.target.host(), "other:7000");
        assert_eq!(e.user, "carol", "the setting comes before the URL's ACL user");
        assert_eq!(e.jobs[0].0.job, "inbound");
        assert_eq!(e.jobs[0].0.lock, "inLock");
        assert!(e.warning.is_none(), "the keyring is not asked when the URL comes from the environment");
        let o = Overrides { user: Some("dave".into()), ..o };
        assert_eq!(s.effective(&o, &NoKeyring).unwrap().user, "dave");
        let plain = Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() };
        assert_eq!(plain.effective(&Overrides::default(), &NoKeyring).unwrap().user, "alice");
    }

    #[test]
    fn no_keyring_is_said_once_not_fatal() {
        let e = Settings::default().effective(&Overrides::default(), &NoKeyring).unwrap();
        assert!(e.warning.unwrap().contains("no OS keyring"));
    }

    #[test]
    fn a_typed_password_is_split_out_of_the_url() {
        assert_eq!(split_password("redis://alice:pw@db:1"), ("redis://alice@db:1".into(), Some("pw".into())));
        assert_eq!(split_password("rediss://:pw@db"), ("rediss://db".into(), Some("pw".into())));
        assert_eq!(split_password("redis://db"), ("redis://db".into(), None));
    }

    #[test]
    fn validation_names_each_bad_field() {
        let s = Settings {
            redis_url: "http://x".into(),
            user: "a b".into(),
            poll_ms: 5,
            jobs: vec![],
            ..Settings::default()
        };
        let fields: Vec<String> = s.validate().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, vec!["redis_url", "user", "jobs", "poll_ms"]);
        assert!(Settings::default().validate().is_empty());
    }

    #[test]
    fn unknown_and_missing_fields_fall_back_to_defaults() {
        let s: Settings = serde_json::from_str(r#"{"user":"alice","jobs":[{"name":"outbound"}]}"#).unwrap();
        assert_eq!(s.user, "alice");
        assert!(s.jobs[0].heartbeats);
        assert_eq!(s.poll_ms, 1_000);
    }
}
