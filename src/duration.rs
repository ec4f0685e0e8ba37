//! Durations as text: read from what people type (`500ms`, `30s`, `1.5m`,
//! `1h`, `7d`), written back the same way, and said to people (`4 min 5 s`).

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
    /// A unit other than ms, s, m (min), h or d.
    #[error("{0:?} is not a unit of time; use ms, s, m, h or d")]
    UnknownUnit(String),
    /// More than a `Duration` holds.
    #[error("too long; give at most a few years")]
    OutOfRange,
}

/// Parses `500ms`, `30s`, `1.5m`, `5min`, `1h`, `7d`. A number needs its unit.
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
        "d" => 86_400.0,
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

/// A Redis time (ms since the epoch) as a date and time of day
/// `offset_min` minutes east of UTC: `2026-11-22 10:00:05`.
pub fn date_time(ms: u64, offset_min: i32) -> String {
    let secs = (ms / 1000) as i64 + i64::from(offset_min) * 60;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// `UTC`, `UTC+8`, `UTC+5:30`, `UTC-3`: the zone [`date_time`] wrote in.
pub fn utc_zone(offset_min: i32) -> String {
    let (sign, abs) = if offset_min < 0 { ('-', -offset_min) } else { ('+', offset_min) };
    match (abs / 60, abs % 60) {
        (0, 0) => "UTC".to_owned(),
        (h, 0) => format!("UTC{sign}{h}"),
        (h, m) => format!("UTC{sign}{h}:{m:02}"),
    }
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
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
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
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
    fn times_are_written_in_the_zone_asked() {
        assert_eq!(date_time(1_700_000_000_000, 0), "2023-11-14 22:13:20");
        assert_eq!(date_time(1_700_000_000_000, 480), "2023-11-15 06:13:20");
        assert_eq!(date_time(951_782_400_000, 0), "2000-02-29 00:00:00");
        assert_eq!(date_time(0, -60), "1969-12-31 23:00:00");
        assert_eq!(
            (utc_zone(0), utc_zone(480), utc_zone(330), utc_zone(-180)),
            ("UTC".into(), "UTC+8".into(), "UTC+5:30".into(), "UTC-3".into())
        );
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
