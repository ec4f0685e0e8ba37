//! The rules for names: jobs, supervisors and servers, lock keys,
//! sentinels and their primary, and a flip's reason.

use super::{Field, Invalid, MAX_REASON_CHARS, Problem};

/// A job name: it becomes the keys' hash tag, so no braces, and no spaces.
///
/// # Errors
/// [`Problem::JobName`].
pub fn job_name(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.chars().count() > 100 || s.contains(|c: char| c.is_whitespace() || c == '{' || c == '}') {
        Err(Problem::JobName)
    } else {
        Ok(s.to_owned())
    }
}

/// Job names as the settings form lists them: separated by commas.
///
/// # Errors
/// The first name that cannot be used, or [`Problem::NoJob`].
pub fn job_names(list: &str) -> Result<Vec<String>, Invalid> {
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Err(Invalid::new(Field::Jobs, list, Problem::NoJob));
    }
    names.into_iter().map(|n| job_name(n).map_err(|p| Invalid::new(Field::Jobs, n, p))).collect()
}

/// A supervisor's or server's name, by [`check_user`]'s rule (the
/// one the flag keys and ACL rules are written with).
///
/// # Errors
/// [`Problem::Name`].
pub fn name(s: &str) -> Result<String, Problem> {
    check_user(s).map(str::to_owned).map_err(|_| Problem::Name)
}

/// Checks a flip's reason: one line of at most [`MAX_REASON_CHARS`] characters.
///
/// # Errors
/// [`Problem::ReasonTooLong`] or [`Problem::ReasonLines`], for [`Field::Reason`].
pub fn check_reason(reason: &str) -> Result<&str, Invalid> {
    let chars = reason.chars().count();
    let problem = if chars > MAX_REASON_CHARS {
        Problem::ReasonTooLong(chars)
    } else if reason.chars().any(char::is_control) {
        Problem::ReasonLines
    } else {
        return Ok(reason);
    };
    Err(Invalid::new(Field::Reason, &reason.chars().take(40).collect::<String>(), problem))
}

/// Checks that `user` can name a flag key and an ACL rule safely: letters,
/// digits and `._@-`, 1 to 64 of them (no glob characters, no spaces).
///
/// # Errors
/// [`Problem::Name`], for [`Field::User`].
pub fn check_user(user: &str) -> Result<&str, Invalid> {
    let ok = (1..=64).contains(&user.len()) && user.bytes().all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b));
    if ok { Ok(user) } else { Err(Invalid::new(Field::User, user, Problem::Name)) }
}

/// A lock key given instead of `{job}:lock`: any Redis key a person would
/// type, which rules out spaces and control characters.
///
/// # Errors
/// [`Problem::LockKey`].
pub fn lock_key(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.len() > 1000 || s.contains(|c: char| c.is_whitespace() || c.is_control()) {
        Err(Problem::LockKey)
    } else {
        Ok(s.to_owned())
    }
}

/// Sentinel addresses: `HOST:PORT`, separated by commas (an IPv6 host in
/// brackets: `[::1]:26379`).
///
/// # Errors
/// [`Problem::Sentinels`].
pub fn sentinels(list: &str) -> Result<Vec<String>, Problem> {
    let addrs: Vec<String> = list.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect();
    let good = |a: &String| {
        a.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty()
                && !host.contains(|c: char| c.is_whitespace() || "/@?#".contains(c))
                && port.parse::<u16>().is_ok_and(|p| p > 0)
        })
    };
    if addrs.is_empty() || !addrs.iter().all(good) { Err(Problem::Sentinels) } else { Ok(addrs) }
}

/// The name the sentinels know the primary by.
///
/// # Errors
/// [`Problem::MasterName`].
pub fn master_name(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.chars().count() > 100 || s.contains(|c: char| c.is_whitespace() || c.is_control()) {
        Err(Problem::MasterName)
    } else {
        Ok(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_that_could_widen_an_acl_pattern_are_refused() {
        assert!(check_user("alice").is_ok());
        assert!(check_user("a.b-c_d@site").is_ok());
        for bad in ["", "ali*", "a b", "x?", "[a]", "a\n", &"x".repeat(65)] {
            assert!(check_user(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reason_is_one_line_of_bounded_length() {
        assert_eq!(check_reason("stock count tonight").unwrap(), "stock count tonight");
        assert!(check_reason(&"ü".repeat(MAX_REASON_CHARS)).is_ok(), "counted in characters, not bytes");
        let long = check_reason(&"x".repeat(MAX_REASON_CHARS + 1)).unwrap_err();
        assert_eq!((long.field, &long.problem), (Field::Reason, &Problem::ReasonTooLong(201)));
        assert_eq!(long.problem.to_string(), "201 characters long; give at most 200, one sentence");
        assert_eq!(check_reason("two\nlines").map_err(|i| i.problem), Err(Problem::ReasonLines));
    }

    #[test]
    fn job_names_become_hash_tags() {
        for good in ["outbound", "in-bound.2", "商品", &"x".repeat(100)] {
            assert_eq!(job_name(good).as_deref(), Ok(good), "{good}");
        }
        for bad in ["", "out bound", "out\tbound", "{outbound}", "a}b", &"x".repeat(101)] {
            assert_eq!(job_name(bad), Err(Problem::JobName), "{bad:?}");
        }
        assert_eq!(job_names(" outbound, inbound ,"), Ok(vec!["outbound".to_owned(), "inbound".to_owned()]));
        assert_eq!(job_names(" , ").unwrap_err().problem, Problem::NoJob);
        let bad = job_names("outbound, in{bound").unwrap_err();
        assert_eq!(bad.to_string(), "Job \"in{bound\": a job name is 1 to 100 characters without spaces or braces");
    }

    #[test]
    fn names_and_lock_keys_follow_their_rules() {
        assert_eq!(name("a.b-c_d@site").as_deref(), Ok("a.b-c_d@site"));
        for bad in ["", "a b", "ali*", &"x".repeat(65)] {
            assert_eq!(name(bad), Err(Problem::Name), "{bad:?}");
        }
        assert_eq!(lock_key("outboundLock").as_deref(), Ok("outboundLock"));
        assert_eq!(lock_key("{outbound}:lock").as_deref(), Ok("{outbound}:lock"));
        for bad in ["", "a lock", "a\nb"] {
            assert_eq!(lock_key(bad), Err(Problem::LockKey), "{bad:?}");
        }
    }
}
