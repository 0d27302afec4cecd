//! Nearest-rank summaries of timing samples, in milliseconds.

use std::time::Duration;

/// A sample set summarized, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// Summarizes durations; see [`Summary::of`].
    pub fn of_durations(samples: &[Duration]) -> Option<Summary> {
        let ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        Summary::of(&ms)
    }

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
            p99: rank(0.99),
            max: *ms.last()?,
        })
    }

    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "n": self.n,
            "min": round3(self.min),
            "p50": round3(self.p50),
            "p90": round3(self.p90),
            "p99": round3(self.p99),
            "max": round3(self.max),
        })
    }
}

/// Rounds to 3 decimals (microseconds, for values in ms) for the JSON line.
pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let s = Summary::of_durations(&samples).unwrap();
        assert_eq!(
            (s.min, s.p50, s.p90, s.p99, s.max),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
        assert!(Summary::of(&[]).is_none());
    }
}
