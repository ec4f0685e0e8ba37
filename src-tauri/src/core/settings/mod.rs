//! The app's settings: kept in a file (the processes' `store`; never the
//! password: that goes to [`crate::core::passwords`]), layered over the
//! machine's defaults ([`site`]), overridden by environment variables for
//! managed desktops ([`Overrides`]), checked by the library's input rules
//! ([`lockwatch::input`]) and turned into what the watchers need
//! ([`Effective`]). The settings form arrives as typed ([`SettingsForm`]) and
//! gets the same verdict as the command line would.

mod effective;
mod form;
pub mod site;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use lockwatch::connect::DEFAULT_URL;
use lockwatch::input::{self, ConnectionSpec, Field, Invalid, JobSpec, Timing, Topology};
use lockwatch::keys::DEFAULT_JOB;
use lockwatch::supervise::flags;
use lockwatch::{EventKind, status, watcher};
use serde::{Deserialize, Serialize};

pub use effective::{Effective, Overrides};
pub use form::{Accepted, SettingsForm};

use crate::core::i18n::Language;
use crate::core::notes::default_notify_kinds;

/// Store file name, in the app's data dir.
pub const STORE_FILE: &str = "settings.json";
/// The key holding the settings object in the store.
pub const STORE_KEY: &str = "settings";

/// What the user can set, as stored. Every field has a default, so files
/// written by earlier versions (fewer fields, or other ones) still load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Redis URL without password.
    pub redis_url: String,
    /// PEM file of a private CA for `rediss://`.
    pub tls_ca: Option<String>,
    /// Sentinels (`host:port`, comma separated); empty: one Redis at the URL's host.
    pub sentinels: String,
    /// The name the sentinels know the primary by.
    pub sentinel_master: String,
    /// The URL names any node of a Redis Cluster.
    pub cluster: bool,
    /// Supervisor name; empty: the URL's ACL user, else the login name.
    pub user: String,
    /// A URL that names no Redis user logs in as the supervisor's name (each
    /// supervisor has a Redis user of her own, as `lockwatch acl` makes
    /// them): an admin sets it beside one URL for the whole team. Off, such
    /// a URL logs in as `default` (a shared `requirepass`).
    pub login_as_name: bool,
    pub jobs: Vec<JobSettings>,
    pub poll_ms: u64,
    pub heartbeat_grace_ms: u64,
    pub failover_window_ms: u64,
    pub start_grace_ms: u64,
    /// Events that raise a notification.
    pub notify: Vec<EventKind>,
    /// Whether a critical notification (died, conflict, data lost) asks the desktop for a sound.
    pub sound: bool,
    /// Desktop time (ms) until which notifications are muted.
    pub mute_until_ms: Option<u64>,
    pub autostart: bool,
    /// The tray's and dashboard's language; files from before it load as automatic.
    pub language: Language,
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
            sentinels: String::new(),
            sentinel_master: String::new(),
            cluster: false,
            user: String::new(),
            login_as_name: false,
            jobs: vec![JobSettings::default()],
            poll_ms: ms(watcher::Options::default().poll),
            heartbeat_grace_ms: engine.heartbeat_grace_ms,
            failover_window_ms: engine.failover_window_ms,
            start_grace_ms: engine.start_grace_ms,
            notify: default_notify_kinds(),
            sound: true,
            mute_until_ms: None,
            autostart: false,
            language: Language::Auto,
        }
    }
}

impl Settings {
    /// Checks each field by the library's rules; one [`Invalid`] for every bad one.
    pub fn validate(&self) -> Vec<Invalid> {
        let mut bad = self.connection().check();
        if !self.user.is_empty()
            && let Err(problem) = input::name(&self.user)
        {
            bad.push(Invalid { field: Field::User, value: self.user.clone(), problem });
        }
        if self.jobs.is_empty() {
            bad.extend(input::job_names("").err());
        }
        let mut timing_checked = false;
        for job in self.job_specs(None, None) {
            // The timing is shared: said once, not once per job.
            bad.extend(job.check().into_iter().filter(|i| !timing_checked || !is_timing(i.field)));
            timing_checked = true;
        }
        bad
    }

    fn connection(&self) -> ConnectionSpec {
        ConnectionSpec {
            url: self.redis_url.clone(),
            tls_ca: self.tls_ca.as_deref().filter(|c| !c.is_empty()).map(PathBuf::from),
            topology: Topology::from_inputs(Some(&self.sentinels), Some(&self.sentinel_master))
                .or_cluster(self.cluster),
        }
    }

    fn timing(&self) -> Timing {
        Timing {
            heartbeat_grace: Duration::from_millis(self.heartbeat_grace_ms),
            failover_window: Duration::from_millis(self.failover_window_ms),
            start_grace: Duration::from_millis(self.start_grace_ms),
            poll: Duration::from_millis(self.poll_ms),
        }
    }

    /// The jobs to watch; `job` (one or several) and `lock_key` (the
    /// environment's) replace the stored ones.
    fn job_specs(&self, job: Option<&str>, lock_key: Option<&str>) -> Vec<JobSpec> {
        let spec = |name: &str, lock: Option<&str>, heartbeats| JobSpec {
            name: name.to_owned(),
            lock_key: lock_key.or(lock).map(str::to_owned),
            heartbeats,
            timing: self.timing(),
        };
        match job {
            // Several, separated by commas, as `--job` takes them; a name
            // that breaks the rule is kept whole, for its check to say so.
            Some(job) => match input::job_names(job) {
                Ok(names) => names.iter().map(|name| spec(name, None, true)).collect(),
                Err(_) => vec![spec(job, None, true)],
            },
            // An empty lock key was written by early versions for "none".
            None => self
                .jobs
                .iter()
                .map(|j| spec(&j.name, j.lock_key.as_deref().filter(|k| !k.is_empty()), j.heartbeats))
                .collect(),
        }
    }

    /// The stored URL as it logs in: with [`Settings::login_as_name`], as
    /// the supervisor named in the settings or `overrides`, else as her OS
    /// login (as *Your name* says it defaults to), when it names no Redis
    /// user, so the machine's one URL logs each supervisor in as herself.
    pub fn login_url(&self, overrides: &Overrides) -> String {
        let name = self.login_as_name.then(|| {
            overrides
                .user
                .clone()
                .or_else(|| Some(self.user.clone()).filter(|u| !u.is_empty()))
                .or_else(|| flags::default_user(None).ok())
        });
        lockwatch::address::with_user(&self.redis_url, name.flatten().as_deref())
    }
}

fn is_timing(field: Field) -> bool {
    matches!(field, Field::HeartbeatGrace | Field::FailoverWindow | Field::StartGrace | Field::Poll)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
