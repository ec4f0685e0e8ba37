//! A worker's name: one live process per name. Whether a name can be
//! claimed, as a snapshot shows its heartbeat (pure); and the name when none
//! is given: the host name, and the one taken instead when another live
//! worker already runs under that name (a cloned host keeps its original's
//! host name): the host name with the address this host reaches Redis
//! from, which a clone does not share.

use std::net::{ToSocketAddrs, UdpSocket};

use crate::address::Endpoint;
use crate::snapshot::{Beat, Snapshot};

/// What a snapshot says of claiming the name `node` for the process `instance`.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim<'a> {
    /// Another live process has it: its presence subscription is counted.
    Taken(&'a Beat),
    /// The heartbeat names a process whose subscription is gone and that
    /// says it runs no job: the claim may replace it at once. One that says
    /// it runs the job is not replaced on absence alone (it may be frozen,
    /// its connections cut): the script keeps its name a lease past its beat.
    Replaces(&'a str),
    /// Nothing in the snapshot stands in the way (the heartbeat script still
    /// refuses a process that beat less than a lease ago).
    Open,
}

/// Whether `instance` may claim the name `node`, as `snap` shows its heartbeat.
pub fn claim<'a>(snap: &'a Snapshot, node: &str, instance: &str) -> Claim<'a> {
    let other = snap.beats.iter().find(|b| b.node == node && b.instance.as_deref().is_some_and(|i| i != instance));
    match other {
        Some(b) if b.present == Some(true) => Claim::Taken(b),
        Some(b @ Beat { present: Some(false), instance: Some(dead), .. }) if !b.claims_job() => Claim::Replaces(dead),
        _ => Claim::Open,
    }
}

/// The default name and its fallback, for a worker reaching Redis at `redis`.
pub fn default_names(redis: &Endpoint) -> (String, String) {
    let host = crate::supervise::flags::this_host();
    let host: String = host.chars().filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c)).take(40).collect();
    let host = if host.is_empty() { "worker".to_owned() } else { host };
    let from = local_address(redis.addr()).unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned());
    let fallback = format!("{host}@{from}");
    (host, fallback)
}

/// The address of this host's side of a route to `addr` (`host:port`),
/// with `-` for an IPv6 address's colons; no packet is sent.
fn local_address(addr: &str) -> Option<String> {
    let remote = addr.to_socket_addrs().ok()?.next()?;
    let bind = if remote.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(remote).ok()?;
    Some(socket.local_addr().ok()?.ip().to_string().replace(':', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_taken_while_another_process_lives_under_it() {
        let beat = |instance: &str, present: Option<bool>| Beat {
            node: "wh-a".to_owned(),
            instance: Some(instance.to_owned()),
            present,
            ..Beat::default()
        };
        let snap = |beats| Snapshot { beats, ..Snapshot::default() };
        let alive = snap(vec![beat("other", Some(true))]);
        assert!(matches!(claim(&alive, "wh-a", "me"), Claim::Taken(_)), "alive, even when stopped");
        assert_eq!(claim(&alive, "wh-b", "me"), Claim::Open, "another name");
        assert_eq!(claim(&snap(vec![beat("me", Some(true))]), "wh-a", "me"), Claim::Open, "its own");
        assert_eq!(claim(&snap(vec![beat("other", Some(false))]), "wh-a", "me"), Claim::Replaces("other"));
        // Its subscription gone while it says it runs the job: frozen, maybe.
        let running = Beat { state: Some(crate::schema::BeatState::Running), ..beat("other", Some(false)) };
        assert_eq!(claim(&snap(vec![running]), "wh-a", "me"), Claim::Open, "absence alone");
        assert_eq!(claim(&snap(vec![beat("other", None)]), "wh-a", "me"), Claim::Open, "the script decides");
        assert_eq!(claim(&snap(vec![]), "wh-a", "me"), Claim::Open);
    }

    #[test]
    fn the_fallback_names_the_address_redis_is_reached_from_and_is_a_valid_name() {
        let (host, fallback) = default_names(&Endpoint::new("127.0.0.1:6379", false));
        assert!(crate::input::check_user(&host).is_ok(), "{host}");
        assert_eq!(fallback, format!("{host}@127.0.0.1"));
        let (_, socket) = default_names(&Endpoint::new("/run/redis.sock", false));
        assert!(crate::input::check_user(&socket).is_ok(), "{socket}");
        assert_ne!(socket, host);
    }
}
