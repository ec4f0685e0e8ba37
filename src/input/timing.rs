//! The rules for durations: each timing input's range, the lease, and how
//! long "I'm on it" lasts and what its note may hold.

use std::time::Duration;

use crate::duration::{format_duration, parse_duration};
use crate::{status, watcher};

use super::{Field, Invalid, MAX_ACK_NOTE_CHARS, MAX_LEASE, MIN_LEASE, Problem};

const HOUR: Duration = Duration::from_secs(3600);

/// The range each timing input may take, by its field.
pub fn range(field: Field) -> Option<(Duration, Duration)> {
    match field {
        Field::Poll => Some((Duration::from_millis(100), HOUR)),
        Field::HeartbeatGrace => Some((Duration::from_millis(500), HOUR)),
        Field::FailoverWindow | Field::StartGrace => Some((Duration::ZERO, HOUR)),
        Field::AckFor => Some(ACK_RANGE),
        _ => None,
    }
}

/// A duration for `field`, within its [`range`].
///
/// # Errors
/// The [`Problem`] with it.
pub fn duration_for(field: Field, s: &str) -> Result<Duration, Problem> {
    let d = parse_duration(s)?;
    check_range(field, d)?;
    Ok(d)
}

fn check_range(field: Field, d: Duration) -> Result<(), Problem> {
    match range(field) {
        Some((min, max)) if d < min || d > max => Err(Problem::OutOfRange { min, max }),
        _ => Ok(()),
    }
}

/// How long "I'm on it" lasts when no duration is given.
pub const DEFAULT_ACK_FOR: Duration = HOUR;
/// The durations an acknowledgement may have: long enough to look, short
/// enough that a forgotten one ends within the day.
pub const ACK_RANGE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(12 * 3600));
/// How long an acknowledgement lasts: `30m`, `2h`, within [`ACK_RANGE`].
///
/// # Errors
/// The [`Problem`] with it.
pub fn ack_for(s: &str) -> Result<Duration, Problem> {
    duration_for(Field::AckFor, s)
}

/// An acknowledgement's duration given as a value (the tray's menu item),
/// by the same rule as [`ack_for`].
///
/// # Errors
/// [`Problem::OutOfRange`].
pub fn ack_lasts(d: Duration) -> Result<Duration, Problem> {
    check_range(Field::AckFor, d)?;
    Ok(d)
}

/// An acknowledgement's note: one line of at most [`MAX_ACK_NOTE_CHARS`] characters.
///
/// # Errors
/// [`Problem::NoteTooLong`] or [`Problem::NoteLines`].
pub fn ack_note(s: &str) -> Result<String, Problem> {
    let chars = s.chars().count();
    if chars > MAX_ACK_NOTE_CHARS {
        return Err(Problem::NoteTooLong(chars));
    }
    if s.chars().any(char::is_control) {
        return Err(Problem::NoteLines);
    }
    Ok(s.trim().to_owned())
}

/// A lock lease: long enough for three renewals to fit in it.
///
/// # Errors
/// The [`Problem`] with it.
pub fn lease(s: &str) -> Result<Duration, Problem> {
    let lease = parse_duration(s)?;
    if lease < MIN_LEASE {
        return Err(Problem::LeaseTooShort);
    }
    if lease > MAX_LEASE {
        return Err(Problem::LeaseTooLong);
    }
    Ok(lease)
}

/// How to judge a job: the timing inputs, shared by every job of a tray.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// A heartbeat older than this is stale.
    pub heartbeat_grace: Duration,
    /// A holder change through a gap shorter than this is a failover.
    pub failover_window: Duration,
    /// How long a server may take to start the job after it is enabled.
    pub start_grace: Duration,
    /// How often the watcher reads when nothing wakes it earlier.
    pub poll: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        let engine = status::Config::default();
        Timing {
            heartbeat_grace: Duration::from_millis(engine.heartbeat_grace_ms),
            failover_window: Duration::from_millis(engine.failover_window_ms),
            start_grace: Duration::from_millis(engine.start_grace_ms),
            poll: watcher::Options::default().poll,
        }
    }
}

impl Timing {
    /// Every duration outside its range.
    pub fn check(&self) -> Vec<Invalid> {
        [
            (Field::HeartbeatGrace, self.heartbeat_grace),
            (Field::FailoverWindow, self.failover_window),
            (Field::StartGrace, self.start_grace),
            (Field::Poll, self.poll),
        ]
        .into_iter()
        .filter_map(|(field, d)| check_range(field, d).err().map(|p| Invalid::new(field, &format_duration(d), p)))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duration::DurationError;

    #[test]
    fn an_ack_lasts_a_minute_to_half_a_day_and_its_note_is_a_line() {
        assert_eq!(ack_for("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(ack_for("1h"), Ok(DEFAULT_ACK_FOR));
        assert!(matches!(ack_for("30s"), Err(Problem::OutOfRange { .. })));
        assert!(matches!(ack_for("13h"), Err(Problem::OutOfRange { .. })));
        assert!(matches!(ack_for("90"), Err(Problem::Duration(DurationError::NoUnit))));
        assert!(ack_lasts(Duration::from_secs(3600)).is_ok());
        assert_eq!(ack_note(" looking at wh-a "), Ok("looking at wh-a".to_owned()));
        assert!(ack_note(&"好".repeat(MAX_ACK_NOTE_CHARS)).is_ok(), "counted in characters");
        const { assert!(MAX_ACK_NOTE_CHARS * 4 <= 1024, "the probe reads every note the rule lets through") };
        assert_eq!(ack_note(&"x".repeat(201)), Err(Problem::NoteTooLong(201)));
        assert_eq!(ack_note("two\nlines"), Err(Problem::NoteLines));
    }

    #[test]
    fn each_timing_field_has_its_range() {
        assert_eq!(duration_for(Field::Poll, "100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(
            duration_for(Field::Poll, "50ms"),
            Err(Problem::OutOfRange { min: Duration::from_millis(100), max: HOUR })
        );
        assert!(duration_for(Field::HeartbeatGrace, "400ms").is_err());
        assert!(duration_for(Field::HeartbeatGrace, "500ms").is_ok());
        assert!(duration_for(Field::FailoverWindow, "0s").is_ok());
        assert!(duration_for(Field::StartGrace, "61m").is_err());
        assert_eq!(duration_for(Field::StartGrace, "2h").unwrap_err().to_string(), "out of range; give 0s to 1h");
        assert_eq!(duration_for(Field::Poll, "5").unwrap_err().to_string(), "give a unit: 500ms, 10s, 5m or 1h");
        assert_eq!(range(Field::Lease), None, "a lease has a minimum only");
    }

    #[test]
    fn a_lease_fits_three_renewals() {
        assert_eq!(lease("300ms"), Ok(MIN_LEASE));
        assert_eq!(lease("299ms"), Err(Problem::LeaseTooShort));
        assert_eq!(lease("1h"), Ok(MAX_LEASE));
        assert_eq!(lease("61m"), Err(Problem::LeaseTooLong));
        assert_eq!(lease("99999999999999h"), Err(Problem::LeaseTooLong));
        assert_eq!(lease("299ms").unwrap_err().to_string(), "too short; give 300ms or more (default 30s)");
        assert_eq!(lease("30"), Err(Problem::Duration(DurationError::NoUnit)));
    }
}
