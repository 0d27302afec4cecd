//! The figures of one load run, as a small table.

use std::fmt;
use std::time::Duration;

use crate::asks::Timeouts;
use crate::hold::Tally;
use crate::proc::Sample;

/// What one run measured.
#[derive(Debug)]
pub struct Figures {
    pub before: Sample,
    /// Right after the crowds connected.
    pub held: Sample,
    /// The highest readings while the abuse was held.
    pub peak: Sample,
    pub after: Sample,
    /// How long the handles took to come back down (`None`: they did not).
    pub settled: Option<Duration>,
    pub half_sent: usize,
    pub half: Tally,
    pub idle_sent: usize,
    pub idle: Tally,
    pub timeouts: Timeouts,
    pub ask_timeout: Duration,
    /// The answered ask's round trip.
    pub answered: Duration,
    pub own_limit: Option<u64>,
    pub daemon_limit: Option<u64>,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn crowd(f: &mut fmt::Formatter<'_>, name: &str, sent: usize, t: &Tally) -> fmt::Result {
    writeln!(
        f,
        "{name:<28} {sent:>6} sent, {:>6} connected, {:>6} refused at once, {:>6} dropped by the daemon ({:.1}–{:.1} s), {:>4} still open, {:>4} could not connect",
        t.connected, t.refused, t.dropped, t.drop_secs.0, t.drop_secs.1, t.open, t.connect_failed
    )
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = |l: Option<u64>| l.map_or("?".to_owned(), |l| l.to_string());
        writeln!(
            f,
            "open-file limits: hark-load {}, daemon {}",
            limit(self.own_limit),
            limit(self.daemon_limit)
        )?;
        writeln!(
            f,
            "{:<28} {:>10} {:>10} {:>6}",
            "daemon", "RSS MiB", "peak MiB", "fds"
        )?;
        for (name, s) in [
            ("before", self.before),
            ("abuse connected", self.held),
            ("highest under abuse", self.peak),
            ("after", self.after),
        ] {
            writeln!(
                f,
                "{name:<28} {:>10.1} {:>10.1} {:>6}",
                mib(s.rss_kib),
                mib(s.peak_kib),
                s.fds
            )?;
        }
        match self.settled {
            Some(t) => writeln!(
                f,
                "fds back to {} within {:.2} s of the release",
                self.before.fds,
                t.as_secs_f64()
            )?,
            None => writeln!(
                f,
                "fds NOT back to {} (still {})",
                self.before.fds, self.after.fds
            )?,
        }
        crowd(f, "(a) half frames", self.half_sent, &self.half)?;
        crowd(f, "(b) idle, one process", self.idle_sent, &self.idle)?;
        let t = &self.timeouts;
        writeln!(
            f,
            "{:<28} {:>6} sent, {:>6} timed out on time ({:.1} s; slowest heard {:.2} s), {} settled otherwise, {} failed",
            "(c) unanswered asks",
            t.sent,
            t.timed_out,
            self.ask_timeout.as_secs_f64(),
            t.slowest_secs,
            t.other,
            t.failed
        )?;
        writeln!(
            f,
            "{:<28} answered in {:.1} ms",
            "(d) an ask under abuse",
            self.answered.as_secs_f64() * 1000.0
        )
    }
}
