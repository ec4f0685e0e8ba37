//! The worker's name when none is given: the host name, and the one it
//! takes instead when another live worker already runs under that name (a
//! cloned host keeps its original's host name): the host name with the
//! address this host reaches Redis from, which a clone does not share.

use std::net::{ToSocketAddrs, UdpSocket};

use crate::address::Endpoint;

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
    fn the_fallback_names_the_address_redis_is_reached_from_and_is_a_valid_name() {
        let (host, fallback) = default_names(&Endpoint::new("127.0.0.1:6379", false));
        assert!(crate::spec::check_user(&host).is_ok(), "{host}");
        assert_eq!(fallback, format!("{host}@127.0.0.1"));
        let (_, socket) = default_names(&Endpoint::new("/run/redis.sock", false));
        assert!(crate::spec::check_user(&socket).is_ok(), "{socket}");
        assert_ne!(socket, host);
    }
}
