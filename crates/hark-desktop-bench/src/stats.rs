//! Nearest-rank summaries of samples in milliseconds, and the clocks they
//! come from: the benchmark's, dbus-monitor's `time=` and the app log's
//! `timestamp`, all the same wall clock (`CLOCK_REALTIME`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A sample set summarized, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

impl Summary {
    /// Summarizes `ms` (nearest-rank percentiles; `p50` is the median, the
    /// lower one for an even count). `None` when there are none.
    pub fn of(ms: &[f64]) -> Option<Summary> {
        let mut ms = ms.to_vec();
        ms.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = (q * ms.len() as f64).ceil() as usize;
            ms[i.clamp(1, ms.len()) - 1]
        };
        Some(Summary {
            n: ms.len(),
            min: *ms.first()?,
            p50: rank(0.50),
            p90: rank(0.90),
            max: *ms.last()?,
        })
    }

    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "n": self.n,
            "min": round3(self.min),
            "p50": round3(self.p50),
            "p90": round3(self.p90),
            "max": round3(self.max),
        })
    }
}

/// Rounds to 3 decimals for the JSON line.
pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

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
    fn nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&samples).unwrap();
        assert_eq!((s.min, s.p50, s.p90, s.max), (1.0, 50.0, 90.0, 100.0));
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.max), (7.0, 7.0));
        assert!(Summary::of(&[]).is_none());
    }

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
