//! Durations as text: read from what people type (`500ms`, `30s`, `1.5m`,
//! `1h`), written back the same way, and said to people (`4 min 5 s`).

use std::time::Duration;

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// A number alone: seconds or milliseconds would be a guess.
    #[error("give a unit: 500ms, 10s, 5m or 1h")]
    NoUnit,
    /// No number in front of the unit.
    #[error("not a duration; write a number and a unit: 500ms, 10s, 5m or 1h")]
    NotANumber,
    /// A unit other than ms, s, m (min) or h.
    #[error("{0:?} is not a unit of time; use ms, s, m or h")]
    UnknownUnit(String),
    /// More than a `Duration` holds.
    #[error("too long; give at most a few years")]
    OutOfRange,
}

/// Parses `500ms`, `30s`, `1.5m`, `5min`, `1h`. A number needs its unit.
///
/// # Errors
/// [`DurationError`] saying what is missing or wrong.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().map_err(|_| DurationError::NotANumber)?;
    let factor = match unit.trim() {
        "" => return Err(DurationError::NoUnit),
        "ms" => 0.001,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(DurationError::UnknownUnit(other.to_owned())),
    };
    Duration::try_from_secs_f64(value * factor).map_err(|_| DurationError::OutOfRange)
}

/// A duration the way [`parse_duration`] reads it back: `500ms`, `10s`, `5m`, `1h`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".to_owned(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

/// A duration for people: `850 ms`, `12 s`, `4 min 5 s`, `2 h 3 min`.
pub fn human_duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{} s", ms / 1000),
        60_000..3_600_000 => format!("{} min {} s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{} h {} min", ms / 3_600_000, ms / 60_000 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5min"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration(" 1h "), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn a_duration_needs_a_number_and_a_known_unit() {
        assert_eq!(parse_duration("2"), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("0"), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("ten"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("-5s"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("5y"), Err(DurationError::UnknownUnit("y".to_owned())));
        assert_eq!(parse_duration("1e3s"), Err(DurationError::UnknownUnit("e3s".to_owned())));
        assert_eq!(parse_duration("99999999999999999999999h"), Err(DurationError::OutOfRange));
    }

    #[test]
    fn formatted_durations_read_back_the_same() {
        for ms in [0, 1, 250, 1000, 1500, 10_000, 90_000, 300_000, 3_600_000, 5_400_000] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{}", format_duration(d));
        }
        assert_eq!(format_duration(Duration::from_secs(7)), "7s");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
    }
}
