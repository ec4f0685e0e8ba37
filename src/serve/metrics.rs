//! The jobs as Prometheus sees them: the metrics `lockwatch serve --metrics`
//! serves, kept with the official client (`prometheus-client`) and
//! written in the OpenMetrics text format.
//!
//! Per job: `lockwatch_job_state{job,state}` (1 for the current state, 0
//! for the others), `lockwatch_lock_held{job}`, `lockwatch_holder_info{job,node}`,
//! `lockwatch_failovers_total{job}` (seen by this process since it
//! started), `lockwatch_lock_ttl_seconds{job}`,
//! `lockwatch_last_heartbeat_timestamp_seconds{job}` (the holder's, else
//! the newest of any server's), `lockwatch_fence{job}`,
//! `lockwatch_enabled_users{job}`, `lockwatch_flags_lost{job}` (switches
//! Redis lost while they were on: the job stays as it was); and `lockwatch_redis_up`
//! (the last look at any job),
//! `lockwatch_build_info{version}`. While Redis cannot be read, the
//! state is `unknown`, `lockwatch_redis_up` 0, and the facts of the last
//! read stay.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::status::{State, Status};

type Labels = Vec<(&'static str, String)>;
type Float = Gauge<f64, AtomicU64>;

/// The content type Prometheus asks for first and parses as OpenMetrics.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every metric of the jobs served, and the registry that writes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    state: Family<Labels, Gauge>,
    held: Family<Labels, Gauge>,
    holder: Family<Labels, Gauge>,
    /// The holder each job's series names now, to drop it when it changes.
    holders: Mutex<HashMap<String, Labels>>,
    failovers: Family<Labels, Counter>,
    ttl: Family<Labels, Float>,
    heartbeat: Family<Labels, Float>,
    fence: Family<Labels, Gauge>,
    enabled: Family<Labels, Gauge>,
    flags_lost: Family<Labels, Gauge>,
    redis_up: Gauge,
}

impl Metrics {
    /// The metrics of `jobs`, nothing read yet (`lockwatch_redis_up` 0).
    pub fn new(jobs: &[String]) -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            state: Family::default(),
            held: Family::default(),
            holder: Family::default(),
            holders: Mutex::default(),
            failovers: Family::default(),
            ttl: Family::default(),
            heartbeat: Family::default(),
            fence: Family::default(),
            enabled: Family::default(),
            flags_lost: Family::default(),
            redis_up: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register("lockwatch_job_state", "The job's state: 1 for the current one", m.state.clone());
        registry.register("lockwatch_lock_held", "Whether the job's lock is held", m.held.clone());
        registry.register("lockwatch_holder_info", "The server holding the job's lock", m.holder.clone());
        registry.register("lockwatch_failovers", "Failovers seen since this process started", m.failovers.clone());
        registry.register("lockwatch_lock_ttl_seconds", "Time left on the lock's lease", m.ttl.clone());
        registry.register(
            "lockwatch_last_heartbeat_timestamp_seconds",
            "Redis time of the holder's last heartbeat (else the newest of any server's)",
            m.heartbeat.clone(),
        );
        registry.register("lockwatch_fence", "The job's fence counter", m.fence.clone());
        registry.register("lockwatch_enabled_users", "How many supervisors have the job enabled", m.enabled.clone());
        registry.register(
            "lockwatch_flags_lost",
            "How many supervisors' flags Redis lost while they were on (each counts as on until written again)",
            m.flags_lost.clone(),
        );
        registry.register("lockwatch_redis_up", "Whether the last look at Redis answered", m.redis_up.clone());
        registry.register(
            "lockwatch_build",
            "lockwatch's version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION").to_owned())]),
        );
        for job in jobs {
            drop(m.failovers.get_or_create(&job_labels(job)));
            for state in State::ALL {
                m.state.get_or_create(&state_labels(job, state)).set(0);
            }
        }
        Metrics { registry, ..m }
    }

    /// Takes in a status the watcher of its job published.
    pub fn update(&self, s: &Status) {
        for state in State::ALL {
            self.state.get_or_create(&state_labels(&s.job, state)).set(i64::from(state == s.state));
        }
        let Some(checked) = s.checked_at_ms else {
            self.redis_up.set(0);
            return;
        };
        self.redis_up.set(1);
        let job = job_labels(&s.job);
        let held = !s.lock.holders.is_empty();
        self.held.get_or_create(&job).set(i64::from(held));
        let holder = s.holder.as_ref().map(|h| {
            let node = h.node.clone().unwrap_or_else(|| h.field.clone());
            vec![("job", label(&s.job)), ("node", label(&node))]
        });
        if let Ok(mut holders) = self.holders.lock() {
            if let Some(before) = holders.remove(&s.job).filter(|b| Some(b) != holder.as_ref()) {
                self.holder.remove(&before);
            }
            if let Some(now) = holder {
                self.holder.get_or_create(&now).set(1);
                holders.insert(s.job.clone(), now);
            }
        }
        self.ttl.get_or_create(&job).set(if held { s.lock.ttl_ms.unwrap_or(0) as f64 / 1000.0 } else { 0.0 });
        let beat = s
            .holder
            .as_ref()
            .and_then(|h| h.heartbeat_age_ms)
            .or_else(|| s.nodes.iter().filter_map(|n| n.heartbeat_age_ms).min());
        match beat {
            Some(age) => {
                self.heartbeat.get_or_create(&job).set(checked.saturating_sub(age) as f64 / 1000.0);
            }
            None => {
                self.heartbeat.remove(&job);
            }
        }
        match s.lock.fence {
            Some(fence) => {
                self.fence.get_or_create(&job).set(fence);
            }
            None => {
                self.fence.remove(&job);
            }
        }
        self.enabled.get_or_create(&job).set(s.enabled_users.len() as i64);
        self.flags_lost.get_or_create(&job).set(s.flags_lost.len() as i64);
    }

    /// Counts a failover of `job`.
    pub fn failover(&self, job: &str) {
        self.failovers.get_or_create(&job_labels(job)).inc();
    }

    /// The OpenMetrics text, ending in `# EOF`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn job_labels(job: &str) -> Labels {
    vec![("job", label(job))]
}

fn state_labels(job: &str, state: State) -> Labels {
    vec![("job", label(job)), ("state", state.as_str().to_owned())]
}

/// A label's value as the text format needs it: `prometheus-client`
/// writes values as they are, and a job name may hold `"`, `\` or a
/// newline (its rules refuse only spaces and braces).
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Beat, Flag, Snapshot};
    use crate::status::{Config, Engine};

    fn running() -> Status {
        let now = 1_700_000_000_000;
        let mut snap = Snapshot { time_ms: now, fence: Some(12), ..Default::default() };
        snap.flags.push(Flag { user: "alice".into(), on: Some(true), at_ms: Some(1), host: None });
        snap.lock.kind = crate::snapshot::LockKind::Redisson;
        snap.lock.holders = vec!["u:1".into()];
        snap.lock.ttl_ms = Some(25_500);
        snap.beats.push(Beat {
            node: "wh-a".into(),
            lock_field: Some("u:1".into()),
            fence: Some(12),
            beat_ms: Some(now - 400),
            started_ms: Some(now - 60_000),
            state: Some(crate::schema::BeatState::Running),
            ..Default::default()
        });
        Engine::new("outbound", "{outbound}:lock", Config::default()).handle_read(&snap).status
    }

    #[test]
    fn a_job_name_with_quotes_or_backslashes_is_escaped_in_its_labels() {
        let m = Metrics::new(&["we\"ird\\x".to_owned()]);
        m.update(&Status { job: "we\"ird\\x".into(), ..running() });
        let text = m.text();
        assert!(text.contains("lockwatch_job_state{job=\"we\\\"ird\\\\x\",state=\"running\"} 1"), "{text}");
    }

    #[test]
    fn a_running_job_is_written_as_openmetrics() {
        let m = Metrics::new(&["outbound".to_owned()]);
        let status = running();
        assert_eq!(status.state, State::Running, "{}", status.reason);
        m.update(&status);
        m.failover("outbound");
        let text = m.text();
        for line in [
            "# TYPE lockwatch_job_state gauge",
            "lockwatch_job_state{job=\"outbound\",state=\"running\"} 1",
            "lockwatch_job_state{job=\"outbound\",state=\"down\"} 0",
            "lockwatch_lock_held{job=\"outbound\"} 1",
            "lockwatch_holder_info{job=\"outbound\",node=\"wh-a\"} 1",
            "# TYPE lockwatch_failovers counter",
            "lockwatch_failovers_total{job=\"outbound\"} 1",
            "lockwatch_lock_ttl_seconds{job=\"outbound\"} 25.5",
            "lockwatch_last_heartbeat_timestamp_seconds{job=\"outbound\"} 1699999999.6",
            "lockwatch_fence{job=\"outbound\"} 12",
            "lockwatch_enabled_users{job=\"outbound\"} 1",
            "lockwatch_flags_lost{job=\"outbound\"} 0",
            "lockwatch_redis_up 1",
            "# TYPE lockwatch_build info",
            concat!("lockwatch_build_info{version=\"", env!("CARGO_PKG_VERSION"), "\"} 1"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        m.update(&Status { flags_lost: vec!["alice".into()], ..status });
        assert!(m.text().lines().any(|l| l == "lockwatch_flags_lost{job=\"outbound\"} 1"), "{}", m.text());
    }

    #[test]
    fn each_job_has_its_own_series_and_a_holder_change_of_one_leaves_the_others() {
        let m = Metrics::new(&["outbound".to_owned(), "inbound".to_owned()]);
        let text = m.text();
        for job in ["outbound", "inbound"] {
            assert!(text.contains(&format!("lockwatch_failovers_total{{job=\"{job}\"}} 0")), "{text}");
        }
        m.update(&running());
        m.update(&Status { job: "inbound".into(), ..running() });
        let mut moved = running();
        if let Some(h) = moved.holder.as_mut() {
            h.node = Some("wh-b".into());
        }
        m.update(&moved);
        m.failover("inbound");
        let text = m.text();
        for line in [
            "lockwatch_holder_info{job=\"outbound\",node=\"wh-b\"} 1",
            "lockwatch_holder_info{job=\"inbound\",node=\"wh-a\"} 1",
            "lockwatch_failovers_total{job=\"inbound\"} 1",
            "lockwatch_failovers_total{job=\"outbound\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
        }
        assert!(!text.contains("job=\"outbound\",node=\"wh-a\""), "{text}");
    }

    #[test]
    fn redis_gone_is_unknown_and_down_not_a_blank() {
        let m = Metrics::new(&["outbound".to_owned()]);
        assert!(m.text().contains("lockwatch_redis_up 0"));
        m.update(&running());
        let mut engine = Engine::new("outbound", "{outbound}:lock", Config::default());
        let mut gone = engine.handle_failure("refused", 0).status;
        gone = Status { state: State::Unknown, ..gone };
        m.update(&gone);
        let text = m.text();
        assert!(text.contains("lockwatch_redis_up 0"), "{text}");
        assert!(text.contains("lockwatch_job_state{job=\"outbound\",state=\"unknown\"} 1"), "{text}");
        assert!(text.contains("lockwatch_job_state{job=\"outbound\",state=\"running\"} 0"), "{text}");
    }
}
