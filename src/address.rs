//! Where a Redis is, as text: the endpoint messages name, and the URL's
//! password hidden for printing, split out for the keyring, put back for
//! the redis crate, and the user put in. Nothing here connects.

use std::fmt;
use std::sync::Arc;

/// Where a Redis server is, as messages name it: never with a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`, or a socket path.
    addr: Arc<str>,
    /// Whether the connection is TLS (`rediss://`): a timeout while
    /// connecting may then be a handshake that never came.
    tls: bool,
}

impl Endpoint {
    /// An endpoint at `addr` (`host:port` or a socket path).
    pub fn new(addr: impl Into<Arc<str>>, tls: bool) -> Endpoint {
        Endpoint { addr: addr.into(), tls }
    }

    /// `host:port`, or a socket path.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the connection is TLS.
    pub fn tls(&self) -> bool {
        self.tls
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.addr)?;
        if self.tls {
            f.write_str(" (TLS)")?;
        }
        Ok(())
    }
}

/// The URL with its password replaced by `***`, safe to print and log: in
/// the user info (`redis://user:pw@host`, `rediss://`, `valkey://`…), in
/// the query (`unix:///sock?user=u&pass=pw`, also without `//`), and in
/// strings that are no valid URL at all, where everything up to the last
/// `@` counts as secret.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        // A path or fragment holding `@` is most likely a password with a
        // `/`, `?` or `#` in it that the parser split apart.
        Ok(parsed)
            if !parsed.cannot_be_a_base()
                && !parsed.path().contains('@')
                && !parsed.fragment().is_some_and(|f| f.contains('@')) =>
        {
            redact_parsed(parsed)
        }
        _ => redact_text(url),
    }
}

/// Query keys whose values are shown as they are; every other value is hidden.
const SHOWN_QUERY_KEYS: &[&str] = &["db", "protocol", "user", "username"];

fn redact_parsed(mut url: url::Url) -> String {
    // Setting the user info fails only for URLs without a host, which have none.
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    } else if !url.username().is_empty() {
        // A lone `secret@host` may be a password written without its colon.
        let _ = url.set_username("***");
    }
    if let Some(query) = url.query().map(redact_query) {
        url.set_query(Some(&query));
    }
    if url.fragment().is_some_and(|f| f != "insecure") {
        url.set_fragment(Some("***"));
    }
    url.to_string()
}

fn shown_query_value(key: &str, value: &str) -> String {
    if !SHOWN_QUERY_KEYS.contains(&key) {
        return "***".to_owned();
    }
    // `user:password` in one value, the colon maybe percent-encoded.
    let colon = value.find(':').or_else(|| value.to_ascii_lowercase().find("%3a"));
    match colon {
        Some(at) => format!("{}:***", &value[..at]),
        None => value.to_owned(),
    }
}

/// For strings the URL parser rejects: keeps the scheme, a plain user name
/// and what follows the last `@`, with the query's values hidden.
fn redact_text(url: &str) -> String {
    let scheme_len = url
        .split_once(':')
        .filter(|(scheme, _)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
        .map_or(0, |(scheme, _)| scheme.len() + 1);
    let (scheme, rest) = url.split_at(scheme_len);
    let (slashes, rest) = match rest.strip_prefix("//") {
        Some(after) => ("//", after),
        None => ("", rest),
    };
    let (creds, tail) = match rest.rsplit_once('@') {
        Some((creds, tail)) => {
            let user = creds.split_once(':').map(|(user, _)| user).filter(|u| !u.contains(['/', '?', '#']));
            (user.map_or_else(|| "***@".to_owned(), |u| format!("{u}:***@")), tail)
        }
        None => (String::new(), rest),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => format!("{path}?{}", redact_query(query)),
        None => tail.to_owned(),
    };
    format!("{scheme}{slashes}{creds}{tail}")
}

/// A query string as written, with every value hidden but those of
/// [`SHOWN_QUERY_KEYS`] (a key spelled with `%` escapes is not one of them).
fn redact_query(query: &str) -> String {
    let items: Vec<String> = query
        .split('&')
        .map(|item| match item.split_once('=') {
            Some((key, value)) => format!("{key}={}", shown_query_value(key, value)),
            None if item.is_empty() => String::new(),
            None => "***".to_owned(),
        })
        .collect();
    items.join("&")
}

/// Schemes whose credentials the redis crate reads from the query
/// (`?user=…&pass=…`) rather than from the user info.
fn is_socket(url: &url::Url) -> bool {
    matches!(url.scheme(), "unix" | "redis+unix" | "valkey+unix")
}

/// Splits the password out of a URL, wherever the redis crate would read
/// it (`redis://user:pw@host`, `unix:///sock?pass=pw`): the URL without it,
/// and the password, decoded. A URL that does not parse comes back as it is.
pub fn split_password(url: &str) -> (String, Option<String>) {
    let Ok(mut parsed) = url::Url::parse(url) else { return (url.to_owned(), None) };
    if is_socket(&parsed) {
        let (pass, rest): (Vec<_>, Vec<_>) =
            parsed.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).partition(|(k, _)| k == "pass");
        let Some((_, password)) = pass.into_iter().last().filter(|(_, p)| !p.is_empty()) else {
            return (url.to_owned(), None);
        };
        if rest.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(rest);
        }
        return (parsed.to_string(), Some(password));
    }
    let Some(password) = parsed.password().filter(|p| !p.is_empty()).map(percent_decode) else {
        return (url.to_owned(), None);
    };
    // Fails only for URLs without a host, which have no password either.
    let _ = parsed.set_password(None);
    (parsed.to_string(), Some(password))
}

/// `url` logging in as `user` when it names no Redis user itself (a
/// socket's `?user=` counts), so one address for a whole team logs each
/// supervisor in as herself. A URL that does not parse comes back as it is.
pub fn with_user(url: &str, user: Option<&str>) -> String {
    let (Some(user), Ok(mut parsed)) = (user, url::Url::parse(url)) else { return url.to_owned() };
    if is_socket(&parsed) {
        if !parsed.query_pairs().any(|(k, _)| k == "user") {
            parsed.query_pairs_mut().append_pair("user", user);
        }
    } else if !parsed.username().is_empty() || parsed.set_username(user).is_err() {
        return url.to_owned();
    }
    parsed.to_string()
}

/// `url` with `password` put where the redis crate reads it, encoded; the
/// URL given must have none. A URL that does not parse comes back as it is.
pub fn with_password(url: &str, password: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else { return url.to_owned() };
    if is_socket(&parsed) {
        parsed.query_pairs_mut().append_pair("pass", password);
    } else if parsed.set_password(Some(password)).is_err() {
        return url.to_owned();
    }
    parsed.to_string()
}

/// `%XX` escapes decoded (not `+`: that is a query's space); a malformed
/// escape stays as it is.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(redact("redis://alice:s3cret@db:6379"), "redis://alice:***@db:6379");
        assert_eq!(redact("rediss://:s3cret@db"), "rediss://:***@db");
        assert_eq!(redact("redis://s3cret@db"), "redis://***@db");
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
        assert_eq!(redact("valkeys://alice:s3cret@db:6380/2"), "valkeys://alice:***@db:6380/2");
        assert_eq!(redact("rediss://alice:s3cret@db/#insecure"), "rediss://alice:***@db/#insecure");
        assert_eq!(redact("redis+unix:///run/redis.sock?pass=s3cret"), "redis+unix:///run/redis.sock?pass=***");
        assert_eq!(
            redact("unix:///run/redis.sock?user=alice&pass=s3cret&db=2"),
            "unix:///run/redis.sock?user=alice&pass=***&db=2"
        );
        assert_eq!(redact("unix:/run/redis.sock?pass=s3cret"), "unix:/run/redis.sock?pass=***");
        assert_eq!(redact("redis://db:6379/?password=s3cret"), "redis://db:6379/?password=***");
        assert_eq!(redact("redis://db?user=alice:s3cret"), "redis://db?user=alice:***");
        assert_eq!(redact("redis://alice:p@s3cret@db"), "redis://alice:***@db");
    }

    #[test]
    fn the_password_is_split_out_wherever_the_redis_crate_reads_it() {
        let split = |u: &str| split_password(u);
        assert_eq!(split("redis://alice:pw@db:1"), ("redis://alice@db:1".into(), Some("pw".into())));
        assert_eq!(split("rediss://:pw@db"), ("rediss://db".into(), Some("pw".into())));
        assert_eq!(split("redis://db"), ("redis://db".into(), None));
        assert_eq!(split("redis://alice@db"), ("redis://alice@db".into(), None));
        // Escapes are decoded: the keyring holds the password itself.
        assert_eq!(split("redis://alice:p%40ss%20w@db"), ("redis://alice@db".into(), Some("p@ss w".into())));
        // Unix sockets take theirs from the query.
        assert_eq!(
            split("unix:///run/redis.sock?user=alice&pass=s3%26cret&db=2"),
            ("unix:///run/redis.sock?user=alice&db=2".into(), Some("s3&cret".into()))
        );
        assert_eq!(
            split("redis+unix:///run/redis.sock?pass=pw"),
            ("redis+unix:///run/redis.sock".into(), Some("pw".into()))
        );
        assert_eq!(split("not a url"), ("not a url".into(), None));
    }

    #[test]
    fn a_password_put_back_gives_the_redis_crate_the_same_login() {
        use redis::IntoConnectionInfo as _;
        for (url, password) in [
            ("redis://alice@db:6379", "p@ss w/:?#%"),
            ("rediss://db:6380", "pw"),
            ("unix:///run/redis.sock?user=alice&db=2", "s3&c=ret+"),
            ("redis+unix:///run/redis.sock", "pw"),
        ] {
            let merged = with_password(url, password);
            let info = merged.as_str().into_connection_info().unwrap();
            assert_eq!(info.redis_settings().password(), Some(password), "{merged}");
            assert_eq!(split_password(&merged), (url.to_owned(), Some(password.to_owned())), "{merged}");
        }
        assert_eq!(with_password("redis://alice@db:6379", "p@ss w"), "redis://alice:p%40ss%20w@db:6379");
    }
}
