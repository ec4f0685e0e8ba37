//! Where Redis is, as the user gave it: the URL, a private CA and the
//! topology, checked field by field before anything connects.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::connect::Target;
use crate::error::Error;

use super::{Field, Invalid, Problem, master_name, sentinels};

/// How the data nodes are found, each topology with its own inputs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Topology {
    /// One Redis, at the URL's host.
    #[default]
    Single,
    /// The primary that the sentinels name, followed through failovers;
    /// the URL then gives only user, password and TLS. Both as given:
    /// [`ConnectionSpec::check`] says what is wrong with them.
    Sentinel { sentinels: String, master: String },
    /// A Redis Cluster that the URL's node belongs to. `stray` holds
    /// Sentinel inputs given beside it, which [`ConnectionSpec::check`] refuses.
    Cluster { stray: Option<String> },
}

impl Topology {
    /// The topology from the two Sentinel inputs, either of which may be
    /// missing or blank: neither is one Redis, both is Sentinel.
    pub fn from_inputs(sentinels: Option<&str>, master: Option<&str>) -> Topology {
        let given = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        match (given(sentinels), given(master)) {
            (None, None) => Topology::Single,
            (sentinels, master) => {
                Topology::Sentinel { sentinels: sentinels.unwrap_or_default(), master: master.unwrap_or_default() }
            }
        }
    }

    /// This topology, or a Redis Cluster when `cluster` is on (keeping any
    /// Sentinel inputs for [`ConnectionSpec::check`] to refuse).
    pub fn or_cluster(self, cluster: bool) -> Topology {
        match (cluster, self) {
            (false, topology) => topology,
            (true, Topology::Sentinel { sentinels, master }) => {
                Topology::Cluster { stray: Some(if sentinels.is_empty() { master } else { sentinels }) }
            }
            (true, _) => Topology::Cluster { stray: None },
        }
    }
}

/// Where Redis is: the URL as given (credentials included), the CA of a
/// private TLS server, and how the data nodes are found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionSpec {
    pub url: String,
    pub tls_ca: Option<PathBuf>,
    pub topology: Topology,
}

impl ConnectionSpec {
    /// One Redis at `url`.
    pub fn single(url: impl Into<String>, tls_ca: Option<PathBuf>) -> ConnectionSpec {
        ConnectionSpec { url: url.into(), tls_ca, topology: Topology::Single }
    }

    /// Every input that breaks its rule: a URL the redis crate cannot use, a
    /// CA file that is not there, sentinels or a primary's name that cannot
    /// be used, or one of them without the other.
    pub fn check(&self) -> Vec<Invalid> {
        let mut bad = Vec::new();
        if let Err(e) = url_problem(&self.url) {
            bad.push(Invalid::new(Field::RedisUrl, &self.url, e));
        }
        if let Some(ca) = &self.tls_ca
            && !ca.is_file()
        {
            bad.push(Invalid::new(Field::TlsCa, &ca.display().to_string(), Problem::CaFile));
        }
        if let Topology::Sentinel { sentinels: list, master } = &self.topology {
            match (list.is_empty(), master.is_empty()) {
                (true, _) => bad.push(Invalid::new(Field::Sentinels, list, Problem::SentinelHalf)),
                (false, true) => bad.push(Invalid::new(Field::SentinelMaster, master, Problem::SentinelHalf)),
                (false, false) => {
                    if let Err(p) = sentinels(list) {
                        bad.push(Invalid::new(Field::Sentinels, list, p));
                    }
                    if let Err(p) = master_name(master) {
                        bad.push(Invalid::new(Field::SentinelMaster, master, p));
                    }
                }
            }
        }
        if let Topology::Cluster { stray } = &self.topology {
            if let Some(stray) = stray {
                bad.push(Invalid::new(Field::Cluster, stray, Problem::ClusterAndSentinel));
            }
            bad.extend(self.cluster_problem().map(|(field, value, p)| Invalid::new(field, &value, p)));
        }
        bad
    }

    /// What a cluster cannot use of the URL and the CA file.
    fn cluster_problem(&self) -> Option<(Field, String, Problem)> {
        use redis::IntoConnectionInfo as _;
        if let Some(ca) = &self.tls_ca {
            return Some((Field::TlsCa, ca.display().to_string(), Problem::ClusterCa));
        }
        let info = self.url.as_str().into_connection_info().ok()?;
        if matches!(info.addr(), redis::ConnectionAddr::Unix(_)) {
            return Some((Field::RedisUrl, self.url.clone(), Problem::ClusterUrl));
        }
        (info.redis_settings().db() != 0).then(|| (Field::RedisUrl, self.url.clone(), Problem::ClusterDb))
    }

    /// The server to connect to.
    ///
    /// # Errors
    /// [`Error::BadUrl`], [`Error::TlsCa`] or [`Error::Input`] for input
    /// that cannot be used.
    pub fn target(&self) -> Result<Target, Error> {
        match &self.topology {
            Topology::Single => Target::new(&self.url, self.tls_ca.as_deref()),
            Topology::Sentinel { sentinels: list, master } => {
                let refused =
                    self.check().into_iter().find(|i| matches!(i.field, Field::Sentinels | Field::SentinelMaster));
                if let Some(invalid) = refused {
                    return Err(invalid.into());
                }
                let addrs = sentinels(list).map_err(|p| Invalid::new(Field::Sentinels, list, p))?;
                Target::sentinel(&self.url, self.tls_ca.as_deref(), &addrs, master)
            }
            Topology::Cluster { .. } => {
                let refused = self.check().into_iter().find(|i| matches!(i.field, Field::Cluster | Field::TlsCa));
                if let Some(invalid) = refused {
                    return Err(invalid.into());
                }
                if let Some((field, value, problem)) = self.cluster_problem() {
                    return Err(Invalid::new(field, &value, problem).into());
                }
                Target::cluster(&self.url, self.tls_ca.as_deref())
            }
        }
    }
}

fn url_problem(url: &str) -> Result<(), Problem> {
    match Target::new(url, None) {
        Ok(_) => Ok(()),
        Err(Error::BadUrl { reason, .. }) => Err(Problem::Url(reason)),
        Err(other) => Err(Problem::Url(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_spec_checks_url_and_ca_file_without_showing_the_password() {
        assert!(ConnectionSpec::single("redis://alice:pw@db:6379", None).check().is_empty());
        let bad = ConnectionSpec::single("http://bob:hunter2@db", Some("/no/such/ca.pem".into())).check();
        assert_eq!(bad.len(), 2);
        assert_eq!(bad[0].field, Field::RedisUrl);
        let sentence = bad[0].to_string();
        assert!(sentence.starts_with("Redis URL \"http://bob:***@db"), "{sentence}");
        assert!(sentence.contains("use redis://"), "{sentence}");
        assert!(!sentence.contains("hunter2") && !format!("{:?}", bad[0]).contains("hunter2"));
        assert_eq!((bad[1].field, &bad[1].problem), (Field::TlsCa, &Problem::CaFile));
    }

    #[test]
    fn sentinel_inputs_come_in_pairs_and_follow_their_rules() {
        assert_eq!(Topology::from_inputs(None, Some(" ")), Topology::Single);
        let spec = |s: Option<&str>, m: Option<&str>| ConnectionSpec {
            topology: Topology::from_inputs(s, m),
            ..ConnectionSpec::single("redis://alice:pw@ignored:1", None)
        };
        let good = spec(Some("10.0.0.1:26379, [::1]:26380"), Some("mymaster"));
        assert!(good.check().is_empty());
        assert!(good.target().unwrap().host().starts_with("mymaster (Sentinel 10.0.0.1:26379,[::1]:26380)"));
        assert_eq!(sentinels("a:1,b:2"), Ok(vec!["a:1".to_owned(), "b:2".to_owned()]));
        for bad in ["", "host", "host:", "host:0", "host:99999", "a b:1", ":26379", "redis://h:1"] {
            assert_eq!(sentinels(bad), Err(Problem::Sentinels), "{bad:?}");
        }
        let half = spec(Some("a:1"), None).check();
        assert_eq!((half[0].field, &half[0].problem), (Field::SentinelMaster, &Problem::SentinelHalf));
        let half = spec(None, Some("mymaster")).check();
        assert_eq!(half[0].with_flag(), format!("--sentinel : {}", Problem::SentinelHalf));
        let both = spec(Some("a"), Some("my master")).check();
        let fields: Vec<Field> = both.iter().map(|i| i.field).collect();
        assert_eq!(fields, [Field::Sentinels, Field::SentinelMaster]);
        let err = spec(Some("a"), Some("m")).target().unwrap_err();
        assert!(matches!(&err, Error::Input(i) if i.field == Field::Sentinels), "carried, not flattened: {err:?}");
        assert_eq!(err.to_string(), format!("--sentinel a: {}", Problem::Sentinels));
    }

    #[test]
    fn a_cluster_refuses_sentinels_a_socket_a_database_and_a_private_ca_one_sentence_each() {
        let spec = |url: &str, ca: Option<&str>, t: Topology| ConnectionSpec {
            topology: t.or_cluster(true),
            ..ConnectionSpec::single(url, ca.map(PathBuf::from))
        };
        let good = spec("redis://alice:pw@10.0.0.1:7000", None, Topology::Single);
        assert!(good.check().is_empty());
        assert_eq!(good.target().unwrap().host(), "10.0.0.1:7000 (Cluster)");
        assert!(good.target().unwrap().is_cluster());
        let both = spec("redis://db:7000", None, Topology::from_inputs(Some("a:1"), Some("m"))).check();
        assert_eq!((both[0].field, &both[0].problem), (Field::Cluster, &Problem::ClusterAndSentinel));
        let socket = spec("unix:///run/redis.sock", None, Topology::Single);
        assert_eq!(socket.check()[0].problem, Problem::ClusterUrl);
        assert!(socket.target().unwrap_err().to_string().contains("not a socket path"));
        assert_eq!(spec("redis://db:7000/2", None, Topology::Single).check()[0].problem, Problem::ClusterDb);
        let ca = spec("rediss://db:7000", Some("/etc/hostname"), Topology::Single);
        assert_eq!(ca.check().iter().map(|i| &i.problem).collect::<Vec<_>>(), [&Problem::ClusterCa]);
        let err = ca.target().unwrap_err().to_string();
        assert!(
            err.starts_with("--tls-ca /etc/hostname: a private CA file cannot be used with a Redis Cluster"),
            "{err}"
        );
        assert_eq!(Topology::Single.or_cluster(false), Topology::Single);
    }
}
