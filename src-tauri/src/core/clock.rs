//! The desktop's clock, for what is the desktop's business only (the mute,
//! the time of day in a notification): job ages come from Redis time.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{Local, TimeZone};

/// Desktop time in ms.
pub fn desktop_now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A Redis ms time in the desktop's time zone, `HH:MM:SS`.
pub fn local_time(ms: u64) -> String {
    match Local.timestamp_millis_opt(i64::try_from(ms).unwrap_or(i64::MAX)) {
        chrono::LocalResult::Single(t) => t.format("%H:%M:%S").to_string(),
        _ => String::new(),
    }
}

/// A Redis ms time in the desktop's time zone, `HH:MM`: the tray's time of day.
pub fn time_of_day(ms: u64) -> String {
    match Local.timestamp_millis_opt(i64::try_from(ms).unwrap_or(i64::MAX)) {
        chrono::LocalResult::Single(t) => t.format("%H:%M").to_string(),
        _ => String::new(),
    }
}

/// The next local midnight, in desktop ms; `None` where the time zone skips it.
pub fn next_midnight_ms() -> Option<u64> {
    let midnight = (Local::now().date_naive() + chrono::Duration::days(1)).and_hms_opt(0, 0, 0)?;
    let at = Local.from_local_datetime(&midnight).earliest()?;
    u64::try_from(at.timestamp_millis()).ok()
}
