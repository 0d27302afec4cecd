//! Idle: nothing pending, nobody asking. The CPU time (utime + stime) of the
//! app's whole process tree at the start and the end of a window of wall
//! time, as a share of one core; and the context switches of every thread
//! over the window, which is how a polling timer shows up even when each of
//! its wake-ups costs too little CPU to count.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hark_harness::monitor;

use crate::desktop::Desktop;
use crate::error::Error;
use crate::procs::{self, TreeSample};

/// The app is quiet enough to start the window when it used at most this
/// share of one core over a whole second...
pub const QUIET_PERCENT: f64 = 2.0;
/// ...within this long.
pub const QUIET_PATIENCE: Duration = Duration::from_secs(30);
/// How long the window may take to be released after the last ask (the
/// bench's `window_release_secs` and then some).
pub const RELEASE_PATIENCE: Duration = Duration::from_secs(60);
/// Threads listed in the report, the busiest first.
const THREADS_SHOWN: usize = 8;

/// One process over the window.
#[derive(Debug, Clone)]
pub struct ProcRow {
    pub pid: u32,
    pub name: String,
    /// `None` when it exited during the window.
    pub cpu_ms: Option<f64>,
    pub percent: Option<f64>,
    pub switches: u64,
    pub threads: usize,
}

/// One thread over the window.
#[derive(Debug, Clone)]
pub struct ThreadRow {
    pub process: String,
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    pub switches: u64,
}

#[derive(Debug, Clone)]
pub struct Results {
    pub secs: f64,
    pub quiet_after: Option<Duration>,
    /// Whether the window started after the asks' window was released.
    pub after_release: bool,
    pub procs: Vec<ProcRow>,
    pub cpu_ms: f64,
    pub percent: f64,
    pub switches: u64,
    pub busiest: Vec<ThreadRow>,
    /// App log lines written during the window.
    pub log_lines: Vec<String>,
    /// Notifications dunst closed (expired) during the window.
    pub notifications_closed: usize,
}

/// Waits for the app to be quiet, then measures `secs` of idleness.
///
/// It measures the app at rest, as it idles all day: when the asks showed
/// the window, the window starts once it was released (the log's `window
/// released` from `released_from` on) and the process the app starts ahead
/// of the next show is waiting, as it is for all but the first
/// `window_release_secs` after an answer.
pub fn measure(
    desktop: &Desktop,
    ticks_per_s: u64,
    secs: u64,
    released_from: Option<usize>,
) -> Result<Results, Error> {
    let root = desktop.app_pid;
    if let Some(from) = released_from {
        desktop.event(from, "window released", RELEASE_PATIENCE, |_| true)?;
    }
    let quiet_after = procs::wait_quiet(root, ticks_per_s, QUIET_PERCENT, QUIET_PATIENCE);
    let (log_from, monitor_from) = (desktop.log.len(), desktop.monitor().len());
    let start = TreeSample::take(root);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let end = TreeSample::take(root);
    let wall = started.elapsed().as_secs_f64();
    if desktop.log.ended() {
        return Err(Error::AppExited {
            tail: desktop.log.tail(25),
        });
    }

    let ms_per_tick = 1e3 / ticks_per_s as f64;
    let (rows, busiest) = rows(&start, &end, ms_per_tick, wall);
    // A process that started during the window counts with all it used; one
    // that exited during it, with nothing (its time is gone with it).
    let ticks: u64 = end
        .procs
        .iter()
        .map(|a| a.ticks - start.get(a.pid).map_or(0, |b| b.ticks.min(a.ticks)))
        .sum();
    let cpu_ms = ticks as f64 * ms_per_tick;
    let switches = rows.iter().map(|r| r.switches).sum();
    Ok(Results {
        secs: wall,
        quiet_after,
        after_release: released_from.is_some(),
        procs: rows,
        cpu_ms,
        percent: cpu_ms / (wall * 1e3) * 100.0,
        switches,
        busiest,
        log_lines: desktop
            .log
            .since(log_from)
            .into_iter()
            .map(|l| l.text)
            .collect(),
        notifications_closed: monitor::count(
            &desktop.monitor().since(monitor_from),
            "NotificationClosed",
        ),
    })
}

/// Every process of the tree over the window, from its samples at the start
/// and the end (the app first, then its children in pid order), and the
/// [`THREADS_SHOWN`] busiest threads.
fn rows(
    start: &TreeSample,
    end: &TreeSample,
    ms_per_tick: f64,
    wall: f64,
) -> (Vec<ProcRow>, Vec<ThreadRow>) {
    let mut rows = Vec::new();
    let mut threads = Vec::new();
    let mut pids: Vec<u32> = start
        .procs
        .iter()
        .chain(&end.procs)
        .map(|p| p.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let (before, after) = (start.get(pid), end.get(pid));
        let Some(proc_) = after.or(before) else {
            continue;
        };
        let cpu_ms = match (before, after) {
            (Some(b), Some(a)) => Some(a.ticks.saturating_sub(b.ticks) as f64 * ms_per_tick),
            (None, Some(a)) => Some(a.ticks as f64 * ms_per_tick),
            _ => None,
        };
        let mut switches = 0;
        if let Some(a) = after {
            for (tid, t) in &a.threads {
                let was = before
                    .and_then(|b| b.threads.get(tid))
                    .map_or(0, |b| b.switches);
                let delta = t.switches.saturating_sub(was);
                switches += delta;
                threads.push(ThreadRow {
                    process: proc_.name.clone(),
                    pid,
                    tid: *tid,
                    name: t.name.clone(),
                    switches: delta,
                });
            }
        }
        rows.push(ProcRow {
            pid,
            name: proc_.name.clone(),
            cpu_ms,
            percent: cpu_ms.map(|ms| ms / (wall * 1e3) * 100.0),
            switches,
            threads: after.map_or(0, |a| a.threads.len()),
        });
    }
    // The app first, then its children in pid order (as `tree` lists them).
    let order: BTreeMap<u32, usize> = end
        .procs
        .iter()
        .enumerate()
        .map(|(i, p)| (p.pid, i))
        .collect();
    rows.sort_by_key(|r| order.get(&r.pid).copied().unwrap_or(usize::MAX));
    threads.sort_by_key(|t| std::cmp::Reverse(t.switches));
    threads.truncate(THREADS_SHOWN);
    (rows, threads)
}
