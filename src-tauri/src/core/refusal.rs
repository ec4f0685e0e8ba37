//! A write of the user's own key (her flag, her "on it") that Redis refused
//! or took with a warning, said two ways: in the supervisor's words, by the
//! kind of failure, and in the library's sentence for the curious.

use super::i18n::Tr;

/// A write of the user's own key that Redis refused (or took with a
/// warning), said two ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// In the supervisor's words: the notification, the dashboard's line.
    pub said: String,
    /// The library's sentence (what failed, where, Redis's words), for the dashboard's details.
    pub detail: String,
}

impl Refusal {
    /// A refusal of `user`'s write, worded by its kind rather than by the
    /// driver's message. `login` is the Redis user the server saw (`None`:
    /// `default`): a refusal names that one, and when it is not `user`,
    /// says that a Redis user writes only its own keys.
    pub fn of(err: &lockwatch::Error, user: &str, login: Option<&str>, tr: &Tr) -> Refusal {
        use lockwatch::error::RedisFailure;
        let login = login.unwrap_or("default");
        let id = match err.redis_failure() {
            Some(RedisFailure::Permission) if login != user => "refusal-other-user",
            Some(RedisFailure::Permission) => "refusal-not-allowed",
            Some(RedisFailure::Auth) => "refusal-login",
            Some(RedisFailure::Unreachable) => "refusal-unreachable",
            _ => "refusal-other",
        };
        Refusal { said: tr.ta(id, &[("user", user.into()), ("login", login.into())]), detail: err.to_string() }
    }

    /// A write that was made but does not count yet (the user is not registered).
    pub fn unregistered(warning: String, user: &str, tr: &Tr) -> Refusal {
        Refusal { said: tr.ta("refusal-unregistered", &[("user", user.into())]), detail: warning }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fixtures::{en, zh};

    #[test]
    fn a_refusal_is_said_in_a_supervisors_words_and_keeps_the_details() {
        let host = lockwatch::address::Endpoint::new("db:6379", false);
        // As the library reports an ACL refusal: Redis's words in the cause.
        let err = lockwatch::Error::Redis {
            action: lockwatch::error::Action::SettingFlag { user: "bob".into(), job: "outbound".into() },
            host,
            cause: "NOPERM: this user has no permissions to access one of the keys used as arguments".into(),
            hint: "connect as that user, or ask the admin for the rules printed by `lockwatch acl --user <name>`",
            kind: lockwatch::error::RedisFailure::Permission,
        };
        let r = Refusal::of(&err, "bob", Some("bob"), &en());
        assert!(!r.said.contains("NOPERM") && !r.said.contains("keys used as arguments"), "{}", r.said);
        assert!(r.said.starts_with("Redis does not let bob change this."), "{}", r.said);
        assert!(r.detail.contains("NOPERM"), "the dashboard keeps Redis's words: {}", r.detail);
        assert!(Refusal::of(&err, "bob", Some("bob"), &zh()).said.starts_with("Redis 不允许 bob"));
        // Signed in to Redis as alice, writing bob's flag: the advice names alice, the user the server saw.
        let other = Refusal::of(&err, "bob", Some("alice"), &en()).said;
        assert!(other.starts_with("Redis user alice may change only alice's keys, not bob's"), "{other}");
        assert!(!other.contains("--user bob"), "{other}");
        let zh_other = Refusal::of(&err, "bob", Some("alice"), &zh()).said;
        assert!(zh_other.contains("alice") && zh_other.contains("bob"), "{zh_other}");
        assert!(Refusal::of(&err, "bob", None, &en()).said.starts_with("Redis user default"));
    }
}
