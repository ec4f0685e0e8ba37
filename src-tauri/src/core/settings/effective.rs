//! The settings as they take effect: the stored ones, then the
//! environment's overrides, then the password from the keyring.

use lockwatch::connect::Target;
use lockwatch::input::{self, ConnectionSpec, Field, Invalid, JobSpec, Topology};
use lockwatch::keys::Keys;
use lockwatch::supervise::flags;
use lockwatch::{EventKind, watcher};

use super::Settings;
use crate::core::error::AppError;
use crate::core::passwords::{PasswordStore, account};

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

impl Settings {
    /// What takes effect, with `overrides` and the keyring's password.
    ///
    /// # Errors
    /// [`AppError::Setting`] when the settings or the overrides break a
    /// rule, [`AppError::Library`] when the URL or CA file cannot be used or
    /// no user name can be found.
    pub fn effective(&self, overrides: &Overrides, keyring: &dyn PasswordStore) -> Result<Effective, AppError> {
        let said = |invalid: Invalid| AppError::Setting {
            variable: overrides.source(invalid.field),
            invalid: Box::new(invalid),
        };
        let jobs = self.job_specs(overrides.job.as_deref(), overrides.lock_key.as_deref());
        if let Some(bad) = jobs.iter().flat_map(JobSpec::check).next() {
            return Err(said(bad));
        }
        if let Some(user) = overrides.user.as_deref().or((!self.user.is_empty()).then_some(self.user.as_str()))
            && let Err(problem) = input::name(user)
        {
            return Err(said(Invalid { field: Field::User, value: user.to_owned(), problem }));
        }
        let mut warning = None;
        let url = match &overrides.redis_url {
            Some(url) => url.clone(),
            None => {
                let login = self.login_url(overrides);
                let base = Target::new(&login, None)?;
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
        let target = connection.target()?;
        let user = match overrides.user.clone().or_else(|| (!self.user.is_empty()).then(|| self.user.clone())) {
            Some(user) => user,
            None => flags::default_user(target.user())?,
        };
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
