//! The clocks the samples come from: the benchmark's, dbus-monitor's
//! `time=` and the app log's `timestamp`, all the same wall clock
//! (`CLOCK_REALTIME`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds from `from` to `to` (negative when `to` is earlier).
pub fn ms_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64() * 1e3,
        Err(e) => -e.duration().as_secs_f64() * 1e3,
    }
}

/// dbus-monitor's `time=SECONDS.MICROS` in a message header line.
pub fn monitor_time(header: &str) -> Option<SystemTime> {
    let value = header
        .split_whitespace()
        .find_map(|w| w.strip_prefix("time="))?;
    let (secs, frac) = value.split_once('.').unwrap_or((value, "0"));
    Some(UNIX_EPOCH + Duration::from_secs(secs.parse().ok()?) + fraction(frac)?)
}

/// A decimal fraction of a second (`"123456"` → 123.456 ms).
fn fraction(digits: &str) -> Option<Duration> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: String = digits
        .chars()
        .chain(std::iter::repeat('0'))
        .take(9)
        .collect();
    Some(Duration::from_nanos(nanos.parse().ok()?))
}

/// An RFC 3339 timestamp as tracing-subscriber writes it
/// (`2025-01-02T03:04:05.123456Z`, or with a `±hh:mm` offset).
pub fn rfc3339(text: &str) -> Option<SystemTime> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.splitn(3, '-');
    let year: i64 = ymd.next()?.parse().ok()?;
    let month: i64 = ymd.next()?.parse().ok()?;
    let day: i64 = ymd.next()?.parse().ok()?;
    let (clock, offset_secs) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (clock, offset) = time.split_at(at);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (h, m) = offset[1..].split_once(':')?;
        (
            clock,
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60),
        )
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
    let mut parts = hms.splitn(3, ':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let s: i64 = parts.next()?.parse().ok()?;
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - offset_secs;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?) + fraction(frac)?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks() {
        let at = |s: u64, micros: u64| UNIX_EPOCH + Duration::from_micros(s * 1_000_000 + micros);
        assert_eq!(
            monitor_time("method call time=1700000000.012345 sender=:1.4 -> destination=x"),
            Some(at(1_700_000_000, 12_345))
        );
        assert_eq!(
            rfc3339("2023-11-14T22:13:20.012345Z"),
            Some(at(1_700_000_000, 12_345))
        );
        assert_eq!(
            rfc3339("2023-11-15T00:13:20.5+02:00"),
            Some(at(1_700_000_000, 500_000))
        );
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(UNIX_EPOCH));
        assert_eq!(rfc3339("garbage"), None);
        assert!((ms_between(at(1, 0), at(1, 1500)) - 1.5).abs() < 1e-9);
        assert!((ms_between(at(1, 1500), at(1, 0)) + 1.5).abs() < 1e-9);
    }
}
