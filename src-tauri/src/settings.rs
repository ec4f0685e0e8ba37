//! The app's settings: kept in a file ([`crate::store`]; never the password: that
//! goes to [`crate::passwords`]), overridden by environment variables for
//! managed desktops, checked by the library's input rules ([`lockwatch::spec`])
//! and turned into what the watchers need. The settings form arrives as typed
//! ([`SettingsForm`]) and gets the same verdict as the command line would.

use std::path::PathBuf;
use std::time::Duration;

use lockwatch::connect::{DEFAULT_URL, Target};
use lockwatch::keys::{DEFAULT_JOB, Keys};
use lockwatch::spec::{self, ConnectionSpec, Field, Invalid, JobSpec, Timing, Topology};
use lockwatch::supervise::flags;
use lockwatch::{EventKind, status, watcher};
use serde::{Deserialize, Serialize};

use crate::i18n::Language;
use crate::model::default_notify_kinds;
use crate::passwords::{PasswordStore, account};

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

/// Settings as they take effect: store, then environment overrides, then
/// the password from the keyring.
#[derive(Clone)]
pub struct Effective {
    pub target: Target,
    /// The URL to show: never with a password.
    pub shown_url: String,
    pub user: String,
    /// Each job's keys and watcher settings.
    pub jobs: Vec<(Keys, watcher::Options)>,
    pub notify: Vec<EventKind>,
    /// Set when something about the settings should be told once.
    pub warning: Option<String>,
}

/// Environment overrides, read once: `LOCKWATCH_REDIS_URL`, `LOCKWATCH_USER`,
/// `LOCKWATCH_JOB`, `LOCKWATCH_LOCK_KEY`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub redis_url: Option<String>,
    pub sentinels: Option<String>,
    pub sentinel_master: Option<String>,
    /// `LOCKWATCH_CLUSTER` set to a true value.
    pub cluster: bool,
    pub user: Option<String>,
    pub job: Option<String>,
    pub lock_key: Option<String>,
}

impl Overrides {
    pub fn from_env() -> Overrides {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Overrides {
            redis_url: var("LOCKWATCH_REDIS_URL"),
            sentinels: var("LOCKWATCH_SENTINEL"),
            sentinel_master: var("LOCKWATCH_SENTINEL_MASTER"),
            cluster: var("LOCKWATCH_CLUSTER")
                .is_some_and(|v| ["1", "true", "yes", "on"].contains(&v.trim().to_ascii_lowercase().as_str())),
            user: var("LOCKWATCH_USER"),
            job: var("LOCKWATCH_JOB"),
            lock_key: var("LOCKWATCH_LOCK_KEY"),
        }
    }

    /// The variable a field's override comes from, when it is set.
    fn source(&self, field: Field) -> Option<&'static str> {
        match field {
            Field::RedisUrl => self.redis_url.as_ref().map(|_| "LOCKWATCH_REDIS_URL"),
            Field::Sentinels => self.sentinels.as_ref().map(|_| "LOCKWATCH_SENTINEL"),
            Field::SentinelMaster => self.sentinel_master.as_ref().map(|_| "LOCKWATCH_SENTINEL_MASTER"),
            Field::Cluster => self.cluster.then_some("LOCKWATCH_CLUSTER"),
            Field::User => self.user.as_ref().map(|_| "LOCKWATCH_USER"),
            Field::Jobs => self.job.as_ref().map(|_| "LOCKWATCH_JOB"),
            Field::LockKey => self.lock_key.as_ref().map(|_| "LOCKWATCH_LOCK_KEY"),
            _ => None,
        }
    }
}

/// A refused input, for the settings page: the form field it belongs to and
/// one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: Field,
    pub message: String,
}

impl From<Invalid> for FieldError {
    fn from(invalid: Invalid) -> Self {
        FieldError { field: invalid.field, message: invalid.to_string() }
    }
}

impl Settings {
    /// Checks each field by the library's rules; one [`Invalid`] for every bad one.
    pub fn validate(&self) -> Vec<Invalid> {
        let mut bad = self.connection().check();
        if !self.user.is_empty()
            && let Err(problem) = spec::name(&self.user)
        {
            bad.push(Invalid { field: Field::User, value: self.user.clone(), problem });
        }
        if self.jobs.is_empty() {
            bad.extend(spec::job_names("").err());
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

    /// The jobs to watch; `job` and `lock_key` (the environment's) replace the stored ones.
    fn job_specs(&self, job: Option<&str>, lock_key: Option<&str>) -> Vec<JobSpec> {
        let spec = |name: &str, lock: Option<&str>, heartbeats| JobSpec {
            name: name.to_owned(),
            lock_key: lock_key.or(lock).map(str::to_owned),
            heartbeats,
            timing: self.timing(),
        };
        match job {
            Some(job) => vec![spec(job, None, true)],
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

    /// What takes effect, with `overrides` and the keyring's password.
    ///
    /// # Errors
    /// A sentence when the settings or the overrides break a rule, or the
    /// URL or CA file cannot be used.
    pub fn effective(&self, overrides: &Overrides, keyring: &dyn PasswordStore) -> Result<Effective, String> {
        let said = |invalid: Invalid| match overrides.source(invalid.field) {
            Some(var) => format!("{invalid} (from {var})"),
            None => invalid.to_string(),
        };
        let jobs = self.job_specs(overrides.job.as_deref(), overrides.lock_key.as_deref());
        if let Some(bad) = jobs.iter().flat_map(JobSpec::check).next() {
            return Err(said(bad));
        }
        if let Some(user) = overrides.user.as_deref().or((!self.user.is_empty()).then_some(self.user.as_str()))
            && let Err(problem) = spec::name(user)
        {
            return Err(said(Invalid { field: Field::User, value: user.to_owned(), problem }));
        }
        let mut warning = None;
        let url = match &overrides.redis_url {
            Some(url) => url.clone(),
            None => {
                let login = self.login_url(overrides);
                let base = Target::new(&login, None).map_err(|e| e.to_string())?;
                match keyring.get(&account(base.user(), base.host())) {
                    Ok(Some(password)) => lockwatch::address::with_password(&login, &password),
                    Ok(None) => login,
                    Err(e) => {
                        warning = Some(format!(
                            "no OS keyring ({e}); a password is kept in memory only, or give it in LOCKWATCH_REDIS_URL"
                        ));
                        login
                    }
                }
            }
        };
        // The environment's Sentinel inputs replace the stored ones as a pair.
        let topology = match (&overrides.sentinels, &overrides.sentinel_master) {
            (None, None) => self.connection().topology,
            (s, m) => Topology::from_inputs(s.as_deref(), m.as_deref()).or_cluster(self.cluster),
        }
        .or_cluster(overrides.cluster);
        let connection = ConnectionSpec { url: url.clone(), topology, ..self.connection() };
        if let Some(bad) = connection
            .check()
            .into_iter()
            .find(|i| matches!(i.field, Field::Sentinels | Field::SentinelMaster | Field::Cluster))
        {
            return Err(said(bad));
        }
        let target = connection.target().map_err(|e| e.to_string())?;
        let user = overrides
            .user
            .clone()
            .or_else(|| (!self.user.is_empty()).then(|| self.user.clone()))
            .map_or_else(|| flags::default_user(target.user()).map_err(|e| e.to_string()), Ok)?;
        Ok(Effective {
            target,
            shown_url: lockwatch::address::redact(&url),
            user,
            jobs: jobs.iter().map(|j| (j.keys(), j.watch_options())).collect(),
            notify: self.notify.clone(),
            warning,
        })
    }
}

fn is_timing(field: Field) -> bool {
    matches!(field, Field::HeartbeatGrace | Field::FailoverWindow | Field::StartGrace | Field::Poll)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

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
        let mut duration = |field: Field, text: &str| match spec::duration_for(field, text) {
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
        let jobs = match spec::job_names(&self.jobs) {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

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

    fn form() -> SettingsForm {
        SettingsForm::of(&Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() })
    }

    fn fields(bad: &[FieldError]) -> Vec<Field> {
        bad.iter().map(|e| e.field).collect()
    }

    #[test]
    fn the_password_comes_from_the_keyring_and_is_never_shown() {
        let store = Memory(Mutex::new(HashMap::from([("alice@db:6379".to_owned(), "p@ss w".to_owned())])));
        let s = Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() };
        let e = s.effective(&Overrides::default(), &store).unwrap();
        assert_eq!(e.user, "alice");
        assert_eq!(e.shown_url, "redis://alice:***@db:6379");
    }

    #[test]
    fn one_url_for_the_team_logs_each_supervisor_in_as_herself() {
        let store = Memory(Mutex::new(HashMap::from([("alice@db:6379".to_owned(), "pw".to_owned())])));
        let shared = Settings { redis_url: "redis://db:6379".into(), user: "alice".into(), ..Settings::default() };
        assert_eq!(
            shared.login_url(&Overrides::default()),
            "redis://db:6379",
            "off: a shared requirepass stays `default`"
        );
        let s = Settings { login_as_name: true, ..shared };
        let e = s.effective(&Overrides::default(), &store).unwrap();
        assert_eq!((e.target.user(), e.shown_url.as_str()), (Some("alice"), "redis://alice:***@db:6379"));
        let named = Settings { redis_url: "redis://ops@db:6379".into(), ..s.clone() };
        assert_eq!(named.login_url(&Overrides::default()), "redis://ops@db:6379", "a user in the URL stays");
        let bob = Overrides { user: Some("bob".into()), ..Overrides::default() };
        assert_eq!(s.login_url(&bob), "redis://bob@db:6379");
        let nobody = Settings { user: String::new(), ..s };
        let login = flags::default_user(None).unwrap();
        assert_eq!(
            nobody.login_url(&Overrides::default()),
            format!("redis://{login}@db:6379"),
            "Your name empty: her login"
        );
        let shared_nobody = Settings { login_as_name: false, ..nobody };
        assert_eq!(shared_nobody.login_url(&Overrides::default()), "redis://db:6379", "off: still `default`");
        assert_eq!(
            lockwatch::address::with_user("unix:///run/redis.sock?db=1", Some("alice")),
            "unix:///run/redis.sock?db=1&user=alice"
        );
    }

    #[test]
    fn environment_overrides_the_store_and_the_user_order_holds() {
        let s = Settings { redis_url: "redis://alice@db:6379".into(), user: "carol".into(), ..Settings::default() };
        let o = Overrides {
            redis_url: Some("redis://bob:pw@other:7000".into()),
            user: None,
            job: Some("inbound".into()),
            lock_key: Some("inLock".into()),
            ..Overrides::default()
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
    fn the_cluster_box_or_the_environment_makes_a_cluster_and_refuses_sentinels_beside_it() {
        let form = SettingsForm { cluster: true, ..SettingsForm::of(&Settings::default()) };
        let accepted = form.accept(&Settings::default()).unwrap().settings;
        assert!(accepted.cluster);
        assert!(accepted.effective(&Overrides::default(), &NoKeyring).unwrap().target.is_cluster());
        let both = SettingsForm { sentinels: "a:1".into(), sentinel_master: "m".into(), ..form };
        let bad = both.accept(&Settings::default()).unwrap_err();
        assert_eq!(bad[0].field, Field::Cluster, "{bad:?}");
        let o = Overrides { cluster: true, ..Overrides::default() };
        assert!(Settings::default().effective(&o, &NoKeyring).unwrap().target.is_cluster());
    }

    #[test]
    fn sentinels_from_the_form_or_the_environment_take_effect_as_a_pair() {
        let form = SettingsForm {
            sentinels: " 10.0.0.1:26379,10.0.0.2:26379 ".into(),
            sentinel_master: "mymaster".into(),
            ..SettingsForm::of(&Settings::default())
        };
        let accepted = form.accept(&Settings::default()).unwrap().settings;
        assert_eq!(accepted.sentinels, "10.0.0.1:26379,10.0.0.2:26379");
        let e = accepted.effective(&Overrides::default(), &NoKeyring).unwrap();
        assert!(
            e.target.host().starts_with("mymaster (Sentinel 10.0.0.1:26379,10.0.0.2:26379)"),
            "{}",
            e.target.host()
        );

        let half = SettingsForm { sentinel_master: String::new(), ..form.clone() };
        let bad = half.accept(&Settings::default()).unwrap_err();
        assert_eq!(bad[0].field, Field::SentinelMaster, "{bad:?}");
        let portless = SettingsForm { sentinels: "db".into(), ..form };
        let bad = portless.accept(&Settings::default()).unwrap_err();
        assert_eq!(bad[0].field, Field::Sentinels, "{bad:?}");
        assert!(bad[0].message.contains("HOST:PORT"), "{bad:?}");

        let o = Overrides { sentinels: Some("127.0.0.1:1".into()), ..Overrides::default() };
        let err = Settings::default().effective(&o, &NoKeyring).err().unwrap();
        assert!(err.starts_with("Sentinel primary name") && err.contains("go together"), "{err}");
        let o = Overrides { sentinel_master: Some("m".into()), ..o };
        assert!(Settings::default().effective(&o, &NoKeyring).unwrap().target.host().starts_with("m (Sentinel"));
    }

    #[test]
    fn a_bad_override_is_refused_naming_its_variable() {
        let o = Overrides { job: Some("out bound".into()), ..Overrides::default() };
        let err = Settings::default().effective(&o, &NoKeyring).err().unwrap();
        assert_eq!(
            err,
            "Job \"out bound\": a job name is 1 to 100 characters without spaces or braces (from LOCKWATCH_JOB)"
        );
    }

    #[test]
    fn the_settings_take_effect_as_the_spec_says() {
        let s = Settings {
            jobs: vec![JobSettings { name: "inbound".into(), lock_key: Some("inLock".into()), heartbeats: false }],
            poll_ms: 250,
            heartbeat_grace_ms: 7_000,
            ..Settings::default()
        };
        let e = s.effective(&Overrides::default(), &NoKeyring).unwrap();
        let (keys, options) = &e.jobs[0];
        assert_eq!((keys.lock.as_str(), options.poll), ("inLock", Duration::from_millis(250)));
        assert!(!options.engine.heartbeats);
        assert_eq!(options.engine.heartbeat_grace_ms, 7_000);
    }

    #[test]
    fn no_keyring_is_said_once_not_fatal() {
        let e = Settings::default().effective(&Overrides::default(), &NoKeyring).unwrap();
        assert!(e.warning.unwrap().contains("no OS keyring"));
    }

    #[test]
    fn a_password_typed_in_the_url_goes_to_the_keyring_not_the_file() {
        for (url, stored) in [
            ("redis://alice:pw@db:1", "redis://alice@db:1"),
            ("rediss://:pw@db", "rediss://db"),
            // The redis crate reads a socket's password from the query.
            ("unix:///run/redis.sock?pass=pw", "unix:///run/redis.sock"),
        ] {
            let accepted = SettingsForm { redis_url: url.into(), ..form() }.accept(&Settings::default()).unwrap();
            assert_eq!(accepted.settings.redis_url, stored);
            assert_eq!(accepted.password.as_deref(), Some("pw"));
        }
        let typed = SettingsForm { redis_url: "redis://alice:pw@db".into(), password: "field".into(), ..form() };
        assert_eq!(typed.accept(&Settings::default()).unwrap().password.as_deref(), Some("field"));
    }

    #[test]
    fn the_form_reads_back_what_was_stored() {
        let stored = Settings {
            redis_url: "redis://alice@db:6379".into(),
            jobs: vec![
                JobSettings { name: "outbound".into(), lock_key: Some("outLock".into()), heartbeats: false },
                JobSettings::default(),
            ],
            heartbeat_grace_ms: 7_000,
            poll_ms: 1_500,
            mute_until_ms: Some(42),
            ..Settings::default()
        };
        let f = SettingsForm::of(&stored);
        assert_eq!(
            (f.heartbeat_grace.as_str(), f.poll.as_str(), f.jobs.as_str()),
            ("7s", "1500ms", "outbound, outbound")
        );
        let again = SettingsForm { jobs: "outbound, inbound".into(), ..f }.accept(&stored).unwrap().settings;
        assert_eq!(again.jobs[0], stored.jobs[0], "a job's lock key and mode stay when the form keeps it");
        assert_eq!(again.jobs[1], JobSettings { name: "inbound".into(), ..JobSettings::default() });
        assert_eq!((again.heartbeat_grace_ms, again.poll_ms, again.mute_until_ms), (7_000, 1_500, Some(42)));
    }

    #[test]
    fn validation_names_each_bad_field_once_in_the_forms_order() {
        let bad = SettingsForm {
            redis_url: "http://x".into(),
            user: "a b".into(),
            jobs: " , ".into(),
            poll: "fast".into(),
            start_grace: "2h".into(),
            heartbeat_grace: "10".into(),
            ..form()
        }
        .accept(&Settings::default())
        .unwrap_err();
        assert_eq!(
            fields(&bad),
            [Field::RedisUrl, Field::User, Field::Jobs, Field::Poll, Field::HeartbeatGrace, Field::StartGrace]
        );
        let said: Vec<&str> = bad.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(said[1], "Your name \"a b\": a name is 1 to 64 letters, digits, '.', '_', '@' or '-'");
        assert_eq!(said[2], "Job \" , \": no job is given; give one or more job names separated by commas");
        assert_eq!(said[3], "Poll interval \"fast\": not a duration; write a number and a unit: 500ms, 10s, 5m or 1h");
        assert_eq!(said[4], "Heartbeat grace \"10\": give a unit: 500ms, 10s, 5m or 1h");
        assert_eq!(said[5], "Start grace \"2h\": out of range; give 0s to 1h");
        assert!(form().accept(&Settings::default()).is_ok());
        assert!(Settings::default().validate().is_empty());
    }

    #[test]
    fn the_job_rule_is_the_command_lines() {
        // Earlier the app refused only spaces and braces but said "use letters,
        // digits, '-', '_' or '.'", and let a tab through; now it is one rule.
        let tab = Settings {
            jobs: vec![JobSettings { name: "out\tbound".into(), ..JobSettings::default() }],
            ..Settings::default()
        };
        assert_eq!(fields(&tab.validate().into_iter().map(FieldError::from).collect::<Vec<_>>()), [Field::Jobs]);
        let unicode = SettingsForm { jobs: "出库".into(), ..form() };
        assert!(unicode.accept(&Settings::default()).is_ok());
    }

    #[test]
    fn a_settings_file_of_an_earlier_version_still_loads() {
        // As version 0.1 wrote it, including an empty lock key for "none"
        // and a field this version no longer knows.
        let old = r#"{
            "redis_url": "redis://alice@db:6379", "tls_ca": null, "user": "alice",
            "jobs": [{"name": "outbound", "lock_key": "", "heartbeats": true}, {"name": "inbound", "lock_key": "inLock", "heartbeats": false}],
            "poll_ms": 1000, "heartbeat_grace_ms": 7000, "failover_window_ms": 5000, "start_grace_ms": 10000,
            "notify": ["died", "failover"], "mute_until_ms": null, "autostart": true, "theme": "dark"
        }"#;
        let s: Settings = serde_json::from_str(old).unwrap();
        assert!(s.validate().is_empty(), "{:?}", s.validate());
        let e = s.effective(&Overrides::default(), &NoKeyring).unwrap();
        assert_eq!(e.jobs[0].0.lock, "{outbound}:lock");
        assert_eq!(e.jobs[1].0.lock, "inLock");
        assert_eq!(e.jobs[0].1.engine.heartbeat_grace_ms, 7_000);
        assert_eq!(e.notify, [EventKind::Died, EventKind::Failover]);
        assert!(s.autostart);
        assert_eq!(s.language, Language::Auto, "a file from before the language setting speaks the desktop's");
        let sparse: Settings = serde_json::from_str(r#"{"user":"alice","jobs":[{"name":"outbound"}]}"#).unwrap();
        assert_eq!(sparse.user, "alice");
        assert!(sparse.jobs[0].heartbeats);
        assert_eq!(sparse.poll_ms, ms(watcher::Options::default().poll), "the library's interval");
    }

    #[test]
    fn the_language_is_chosen_in_the_form_and_stored() {
        let chosen = SettingsForm { language: Language::ZhHans, ..form() }.accept(&Settings::default()).unwrap();
        assert_eq!(chosen.settings.language, Language::ZhHans);
        assert_eq!(SettingsForm::of(&chosen.settings).language, Language::ZhHans);
        let stored = serde_json::to_value(&chosen.settings).unwrap();
        assert_eq!(stored["language"], "zh-CN");
        let page: SettingsForm = serde_json::from_str(r#"{"redis_url":"redis://db","jobs":"outbound"}"#).unwrap();
        assert_eq!(page.language, Language::Auto, "a form without the field keeps the default");
    }
}
