//! What the daemon holds, read from `/proc/<pid>`: resident memory and open
//! file handles, and a wait for the handles to come back down.

use std::time::{Duration, Instant};

/// One look at the daemon.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `VmHWM` (the peak resident set so far), KiB.
    pub peak_kib: u64,
    /// Entries in `/proc/<pid>/fd`.
    pub fds: usize,
}

/// Why the daemon could not be looked at.
#[derive(Debug, thiserror::Error)]
#[error("cannot read /proc/{pid}")]
pub struct ProcError {
    pid: u32,
    #[source]
    source: std::io::Error,
}

/// Reads the daemon's memory and handle count.
pub fn sample(pid: u32) -> Result<Sample, ProcError> {
    let err = |source| ProcError { pid, source };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(err)?;
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(err)?
        .count();
    Ok(Sample {
        rss_kib: kib("VmRSS:"),
        peak_kib: kib("VmHWM:"),
        fds,
    })
}

/// The daemon's soft limit on open files, as `/proc/<pid>/limits` says.
pub fn open_files_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Polls until the daemon holds at most `fds` handles, or `patience` runs
/// out; the last sample and how long it took (`None`: it never settled).
pub fn settle(
    pid: u32,
    fds: usize,
    patience: Duration,
) -> Result<(Sample, Option<Duration>), ProcError> {
    let start = Instant::now();
    loop {
        let now = sample(pid)?;
        if now.fds <= fds {
            return Ok((now, Some(start.elapsed())));
        }
        if start.elapsed() > patience {
            return Ok((now, None));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Raises this process's soft limit on open files to its hard limit, and
/// returns the limit now in force.
pub fn raise_open_files() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    getrlimit(Resource::Nofile).current
}
