//! The settings form as the page sends it, read into settings by the
//! library's rules, field by field, in the form's order.

use std::time::Duration;

use lockwatch::EventKind;
use lockwatch::input::{self, Field, Invalid};
use serde::{Deserialize, Serialize};

use super::{JobSettings, Settings, ms};
use crate::core::error::FieldError;
use crate::core::i18n::Language;

/// The settings form as the user typed it: durations as text (`10s`), the
/// jobs as one comma-separated list, and maybe a password.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SettingsForm {
    pub redis_url: String,
    /// Empty: keep the one in the keyring.
    pub password: String,
    pub tls_ca: String,
    pub sentinels: String,
    pub sentinel_master: String,
    pub cluster: bool,
    pub user: String,
    pub jobs: String,
    pub poll: String,
    pub heartbeat_grace: String,
    pub failover_window: String,
    pub start_grace: String,
    pub notify: Vec<EventKind>,
    pub sound: bool,
    pub language: Language,
}

/// A form that passed every rule: the settings to store, and the password
/// for the keyring (typed in its field, or in the URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub settings: Settings,
    pub password: Option<String>,
}

impl SettingsForm {
    /// The form filled in from stored settings.
    pub fn of(s: &Settings) -> SettingsForm {
        let text = |ms: u64| lockwatch::duration::format_duration(Duration::from_millis(ms));
        SettingsForm {
            redis_url: s.redis_url.clone(),
            password: String::new(),
            tls_ca: s.tls_ca.clone().unwrap_or_default(),
            sentinels: s.sentinels.clone(),
            sentinel_master: s.sentinel_master.clone(),
            cluster: s.cluster,
            user: s.user.clone(),
            jobs: s.jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>().join(", "),
            poll: text(s.poll_ms),
            heartbeat_grace: text(s.heartbeat_grace_ms),
            failover_window: text(s.failover_window_ms),
            start_grace: text(s.start_grace_ms),
            notify: s.notify.clone(),
            sound: s.sound,
            language: s.language,
        }
    }

    /// Reads the form over `base` (which keeps what the form does not show:
    /// each job's lock key and heartbeat mode, the mute, start at login).
    ///
    /// # Errors
    /// Every field that breaks its rule, in the form's order.
    pub fn accept(&self, base: &Settings) -> Result<Accepted, Vec<FieldError>> {
        let mut bad: Vec<Invalid> = Vec::new();
        let (url, typed) = lockwatch::address::split_password(self.redis_url.trim());
        let mut duration = |field: Field, text: &str| match input::duration_for(field, text) {
            Ok(d) => ms(d),
            Err(problem) => {
                bad.push(Invalid { field, value: text.trim().to_owned(), problem });
                0
            }
        };
        let poll_ms = duration(Field::Poll, &self.poll);
        let heartbeat_grace_ms = duration(Field::HeartbeatGrace, &self.heartbeat_grace);
        let failover_window_ms = duration(Field::FailoverWindow, &self.failover_window);
        let start_grace_ms = duration(Field::StartGrace, &self.start_grace);
        let jobs = match input::job_names(&self.jobs) {
            Ok(names) => names
                .into_iter()
                .map(|name| {
                    base.jobs
                        .iter()
                        .find(|j| j.name == name)
                        .cloned()
                        .unwrap_or(JobSettings { name, ..JobSettings::default() })
                })
                .collect(),
            Err(invalid) => {
                bad.push(invalid);
                Vec::new()
            }
        };
        let tls_ca = Some(self.tls_ca.trim().to_owned()).filter(|c| !c.is_empty());
        let settings = Settings {
            redis_url: url,
            tls_ca,
            sentinels: self.sentinels.trim().to_owned(),
            sentinel_master: self.sentinel_master.trim().to_owned(),
            cluster: self.cluster,
            user: self.user.trim().to_owned(),
            jobs,
            poll_ms,
            heartbeat_grace_ms,
            failover_window_ms,
            start_grace_ms,
            notify: self.notify.clone(),
            sound: self.sound,
            language: self.language,
            ..base.clone()
        };
        // Each field once: the durations and jobs were said above already.
        let said: Vec<Field> = bad.iter().map(|i| i.field).collect();
        bad.extend(settings.validate().into_iter().filter(|i| !said.contains(&i.field)));
        if !bad.is_empty() {
            let order = |f: Field| FORM_ORDER.iter().position(|x| *x == f).unwrap_or(FORM_ORDER.len());
            bad.sort_by_key(|i| order(i.field));
            return Err(bad.into_iter().map(FieldError::from).collect());
        }
        let password = Some(self.password.clone()).filter(|p| !p.is_empty()).or(typed);
        Ok(Accepted { settings, password })
    }
}

/// The form's fields top to bottom, so messages come in the order the eye reads them.
const FORM_ORDER: &[Field] = &[
    Field::RedisUrl,
    Field::TlsCa,
    Field::Sentinels,
    Field::SentinelMaster,
    Field::Cluster,
    Field::User,
    Field::Jobs,
    Field::LockKey,
    Field::Poll,
    Field::HeartbeatGrace,
    Field::FailoverWindow,
    Field::StartGrace,
];
