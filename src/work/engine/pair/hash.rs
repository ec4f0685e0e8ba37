//! A node's heartbeat hash in the modelled Redis, field by field, as the
//! heartbeat script writes it and the probe decodes it.

use crate::schema::BeatState;
use crate::snapshot::Beat;

/// A hash field's text.
pub(super) fn some(s: impl Into<String>) -> Option<String> {
    Some(s.into())
}

/// A node's heartbeat hash, as far as the decisions read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct BeatHash {
    pub host: Option<String>,
    pub pid: Option<String>,
    pub invocation: Option<String>,
    pub instance: Option<String>,
    pub lock_field: Option<String>,
    pub fence: Option<String>,
    pub state: Option<String>,
    pub beat_ms: Option<String>,
    pub renewed_ms: Option<String>,
    pub presence: Option<String>,
    pub presence_on: Option<String>,
    pub lease_ms: Option<String>,
}

impl BeatHash {
    /// HSET of the fields `other` has.
    pub fn set(&mut self, other: &BeatHash) {
        let pairs = [
            (&mut self.host, &other.host),
            (&mut self.pid, &other.pid),
            (&mut self.invocation, &other.invocation),
            (&mut self.instance, &other.instance),
            (&mut self.lock_field, &other.lock_field),
            (&mut self.fence, &other.fence),
            (&mut self.state, &other.state),
            (&mut self.beat_ms, &other.beat_ms),
            (&mut self.renewed_ms, &other.renewed_ms),
            (&mut self.presence, &other.presence),
            (&mut self.presence_on, &other.presence_on),
            (&mut self.lease_ms, &other.lease_ms),
        ];
        for (mine, theirs) in pairs {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
    }

    /// As the probe decodes it (`probe::fields::decode_beat`), before the
    /// presence count: `present` is `Some(true)` when it claims a subscription.
    pub fn decode(&self, node: &str) -> Beat {
        let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<i64>().ok());
        let unsigned = |v: &Option<String>| num(v).and_then(|n| u64::try_from(n).ok());
        let text = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        Beat {
            node: node.to_owned(),
            host: self.host.clone(),
            pid: unsigned(&self.pid),
            lock_field: self.lock_field.clone(),
            fence: num(&self.fence),
            beat_ms: unsigned(&self.beat_ms),
            state: self.state.as_deref().map(BeatState::parse),
            renewed_ms: unsigned(&self.renewed_ms),
            instance: text(&self.instance),
            invocation: text(&self.invocation),
            present: (self.presence.as_deref() == Some("1")).then_some(true),
            presence_on: text(&self.presence_on),
            lease_ms: unsigned(&self.lease_ms),
            ..Beat::default()
        }
    }
}
