//! One job to watch as the user described it, and what it becomes: its
//! keys, the status engine's config and the watcher's options.

use crate::clock::millis;
use crate::keys::{DEFAULT_JOB, Keys};
use crate::{status, watcher};

use super::{Field, Invalid, Timing, job_name, lock_key};

/// One job to watch, as the user described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub name: String,
    /// The lock's key when it is not `{name}:lock` (an existing Redisson lock).
    pub lock_key: Option<String>,
    /// Off for services that write no heartbeat: the lock alone decides.
    pub heartbeats: bool,
    pub timing: Timing,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec { name: DEFAULT_JOB.to_owned(), lock_key: None, heartbeats: true, timing: Timing::default() }
    }
}

impl JobSpec {
    /// Every input that breaks its rule, one [`Invalid`] each.
    pub fn check(&self) -> Vec<Invalid> {
        let mut bad = Vec::new();
        if let Err(p) = job_name(&self.name) {
            bad.push(Invalid::new(Field::Jobs, &self.name, p));
        }
        if let Some(key) = &self.lock_key
            && let Err(p) = lock_key(key)
        {
            bad.push(Invalid::new(Field::LockKey, key, p));
        }
        bad.extend(self.timing.check());
        bad
    }

    /// The job's keys.
    pub fn keys(&self) -> Keys {
        let keys = Keys::new(&self.name);
        match &self.lock_key {
            Some(lock) => keys.with_lock_key(lock),
            None => keys,
        }
    }

    /// The status engine's settings.
    pub fn engine(&self) -> status::Config {
        status::Config {
            heartbeats: self.heartbeats,
            heartbeat_grace_ms: millis(self.timing.heartbeat_grace),
            failover_window_ms: millis(self.timing.failover_window),
            start_grace_ms: millis(self.timing.start_grace),
            ..status::Config::default()
        }
    }

    /// The watcher's settings.
    pub fn watch_options(&self) -> watcher::Options {
        watcher::Options { poll: self.timing.poll, engine: self.engine(), ..watcher::Options::default() }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_job_spec_becomes_keys_engine_config_and_watch_options() {
        let spec = JobSpec {
            name: "inbound".into(),
            lock_key: Some("inLock".into()),
            heartbeats: false,
            timing: Timing {
                heartbeat_grace: Duration::from_secs(7),
                failover_window: Duration::from_secs(3),
                start_grace: Duration::from_secs(20),
                poll: Duration::from_millis(250),
            },
        };
        assert!(spec.check().is_empty());
        let keys = spec.keys();
        assert_eq!(
            (keys.job.as_str(), keys.lock.as_str(), keys.fence()),
            ("inbound", "inLock", "{inbound}:fence".into())
        );
        let engine = spec.engine();
        assert!(!engine.heartbeats);
        assert_eq!((engine.heartbeat_grace_ms, engine.failover_window_ms, engine.start_grace_ms), (7000, 3000, 20_000));
        assert_eq!(spec.watch_options().poll, Duration::from_millis(250));
        assert_eq!(JobSpec::default().keys().lock, "{outbound}:lock");
        assert_eq!(JobSpec::default().engine(), status::Config::default());
    }

    #[test]
    fn a_job_spec_names_every_bad_input() {
        let spec = JobSpec {
            name: "out bound".into(),
            lock_key: Some("".into()),
            timing: Timing {
                poll: Duration::from_millis(10),
                heartbeat_grace: Duration::from_secs(7200),
                ..Timing::default()
            },
            ..JobSpec::default()
        };
        let bad = spec.check();
        let fields: Vec<Field> = bad.iter().map(|i| i.field).collect();
        assert_eq!(fields, [Field::Jobs, Field::LockKey, Field::HeartbeatGrace, Field::Poll]);
        assert_eq!(bad[3].to_string(), "Poll interval \"10ms\": out of range; give 100ms to 1h");
        assert_eq!(bad[3].with_flag(), "--interval 10ms: out of range; give 100ms to 1h");
    }
}
