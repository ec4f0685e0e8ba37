//! Debounce: an unhealthy verdict (`stale`, `conflict`, `unknown`) is shown
//! only once seen in enough looks in a row, so one odd read or one slow
//! reply changes nothing. Healthy verdicts, and any change away from
//! `pending`, show at once.

use super::{Config, State};

/// Consecutive sightings of a verdict not yet shown.
#[derive(Debug, Clone, Default)]
pub(super) struct Debounce {
    /// The state seen but not yet confirmed, and how many times in a row.
    candidate: Option<(State, u32)>,
}

impl Debounce {
    /// Whether `state`, just read, may replace the state `shown`. A state
    /// confirmed (shown) ends the count.
    pub fn confirms(&mut self, shown: Option<State>, state: State, cfg: &Config) -> bool {
        let confirmed = match shown {
            None | Some(State::Pending) => true,
            Some(shown) if shown == state => true,
            Some(_) if matches!(state, State::Stale | State::Conflict | State::Unknown) => {
                let seen = match self.candidate {
                    Some((c, n)) if c == state => n + 1,
                    _ => 1,
                };
                self.candidate = Some((state, seen));
                seen >= cfg.confirmations
            }
            Some(_) => true,
        };
        if confirmed {
            self.candidate = None;
        }
        confirmed
    }

    /// Forgets any count: what follows starts afresh.
    pub fn reset(&mut self) {
        self.candidate = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unhealthy_state_needs_its_confirmations_a_healthy_one_does_not() {
        let cfg = Config::default();
        let mut d = Debounce::default();
        assert!(!d.confirms(Some(State::Running), State::Stale, &cfg));
        assert!(d.confirms(Some(State::Running), State::Stale, &cfg));
        assert!(!d.confirms(Some(State::Running), State::Conflict, &cfg), "counted afresh once confirmed");
        assert!(d.confirms(Some(State::Running), State::Down, &cfg));
        assert!(d.confirms(Some(State::Pending), State::Unknown, &cfg), "the end of a wait shows at once");
        assert!(d.confirms(None, State::Stale, &cfg), "a first look shows what it sees");
    }
}
