//! The robots' signatures, as their documentation describes them: pure
//! functions of the secret and the time, checked against known answers
//! computed apart (Python's `hmac`).
//!
//! - DingTalk: HMAC-SHA256 keyed with the secret over `timestamp\nsecret`
//!   (`timestamp` in ms), Base64; sent URL-encoded as the `timestamp` and
//!   `sign` query parameters.
//! - Feishu: HMAC-SHA256 keyed with `timestamp\nsecret` (`timestamp` in s)
//!   over an empty message, Base64; sent as `timestamp` and `sign` in the
//!   JSON body.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

/// DingTalk's `sign` for `timestamp_ms`, before URL encoding.
pub fn dingtalk(secret: &str, timestamp_ms: u64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, format!("{timestamp_ms}\n{secret}").as_bytes());
    STANDARD.encode(tag.as_ref())
}

/// Feishu's `sign` for `timestamp_s`.
pub fn feishu(secret: &str, timestamp_s: u64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, format!("{timestamp_s}\n{secret}").as_bytes());
    STANDARD.encode(hmac::sign(&key, b"").as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dingtalk_signs_timestamp_newline_secret_keyed_with_the_secret() {
        assert_eq!(dingtalk("SEC0123456789abcdef", 1_700_000_000_000), "TSZbRFUuvaSQaRKUpF970OPCb2/LcQAP3wOvwZIzBZk=");
        assert_ne!(
            dingtalk("SEC0123456789abcdef", 1_700_000_000_001),
            dingtalk("SEC0123456789abcdef", 1_700_000_000_000)
        );
    }

    #[test]
    fn feishu_signs_an_empty_message_keyed_with_timestamp_newline_secret() {
        assert_eq!(feishu("feishu-secret-0123", 1_700_000_000), "+1U0CMYEwDTNNFL+y2fnyQM4HJAMb/Bh4gSg7jklS/s=");
    }
}
