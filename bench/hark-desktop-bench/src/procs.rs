//! The app's whole process tree from `/proc`: `hark-app` and every process
//! it started (WebKitWebProcess, WebKitNetworkProcess, …), found by walking
//! the `ppid` links of `/proc/*/stat`; their CPU time, resident memory,
//! threads and context switches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One process as `/proc/<pid>/stat` has it.
#[derive(Debug, Clone)]
struct Stat {
    ppid: u32,
    /// utime + stime, in clock ticks.
    ticks: u64,
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may
/// hold anything, so the fields are counted from its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        ticks: fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?,
    })
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `root` and its descendants, `root` first, then in pid order.
pub fn tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(s) = stat(pid) {
                children.entry(s.ppid).or_default().push(pid);
            }
        }
    }
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        if let Some(kids) = children.get(&found[at]) {
            found.extend(kids);
        }
        at += 1;
    }
    found[1..].sort_unstable();
    found
}

/// The CPU time of `root`'s whole tree so far, in clock ticks.
pub fn tree_ticks(root: u32) -> u64 {
    tree(root)
        .into_iter()
        .filter_map(stat)
        .map(|s| s.ticks)
        .sum()
}

/// Waits until `root`'s tree has used at most `percent` of one core over a
/// whole second, for at most `patience`; how long that took, or `None` if it
/// never got that quiet. (Sampling once a second is the measurement itself.)
pub fn wait_quiet(
    root: u32,
    ticks_per_s: u64,
    percent: f64,
    patience: Duration,
) -> Option<Duration> {
    let started = Instant::now();
    let allowed = ticks_per_s as f64 * percent / 100.0;
    let mut last = tree_ticks(root);
    while started.elapsed() < patience {
        std::thread::sleep(Duration::from_secs(1));
        let now = tree_ticks(root);
        if now.saturating_sub(last) as f64 <= allowed {
            return Some(started.elapsed());
        }
        last = now;
    }
    None
}

/// A readable name: the executable's file name from `cmdline` (`comm` is cut
/// at 15 characters: `WebKitWebProces`).
pub fn name(pid: u32) -> String {
    let from_cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|c| {
            let argv0 = c.split(|&b| b == 0).next()?.to_vec();
            let argv0 = String::from_utf8_lossy(&argv0).into_owned();
            let base = Path::new(&argv0)
                .file_name()?
                .to_string_lossy()
                .into_owned();
            (!base.is_empty()).then_some(base)
        });
    from_cmdline.unwrap_or_else(|| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim().to_owned())
            .unwrap_or_else(|_| "?".into())
    })
}

/// A `Key:   123 kB` field of a `/proc` status-like file, in KiB.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Why the clock ticks per second are not known.
#[derive(Debug, thiserror::Error)]
pub enum ClockTicksError {
    #[error("cannot run getconf")]
    Run(#[source] std::io::Error),
    #[error("getconf CLK_TCK printed no number: {printed:?}")]
    NotANumber { printed: String },
}

/// The clock ticks per second that utime and stime count in.
pub fn clock_ticks() -> Result<u64, ClockTicksError> {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .map_err(ClockTicksError::Run)?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    printed
        .parse()
        .map_err(|_| ClockTicksError::NotANumber { printed })
}

/// One thread's context switches (each one a wake-up or a preemption).
#[derive(Debug, Clone)]
pub struct ThreadSample {
    pub name: String,
    pub switches: u64,
}

/// One process, sampled.
#[derive(Debug, Clone)]
pub struct ProcSample {
    pub pid: u32,
    pub name: String,
    pub ticks: u64,
    pub rss_kib: u64,
    /// Proportional set size: shared pages divided among their sharers, so
    /// the tree's sum counts each page once.
    pub pss_kib: Option<u64>,
    /// Threads, by tid.
    pub threads: BTreeMap<u32, ThreadSample>,
}

fn sample_threads(pid: u32) -> BTreeMap<u32, ThreadSample> {
    let mut threads = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return threads;
    };
    for entry in entries.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let Ok(status) = std::fs::read_to_string(dir.join("status")) else {
            continue;
        };
        let count = |key| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let name = std::fs::read_to_string(dir.join("comm"))
            .map(|c| c.trim().to_owned())
            .unwrap_or_default();
        threads.insert(
            tid,
            ThreadSample {
                name,
                switches: count("voluntary_ctxt_switches:") + count("nonvoluntary_ctxt_switches:"),
            },
        );
    }
    threads
}

/// The whole tree under `root`, sampled now.
#[derive(Debug, Clone)]
pub struct TreeSample {
    pub procs: Vec<ProcSample>,
    /// The tree's resident memory with each physical page counted once,
    /// however many of its processes map it (from `/proc/PID/pagemap`;
    /// `None` without the privilege to read page frame numbers).
    pub unique_kib: Option<u64>,
}

/// The physical frames `pid` has resident: the mappings `smaps` reports
/// resident pages for, looked up in `pagemap` (bit 63 present, bits 0–54
/// the frame). `None` when the frames read as zero (no CAP_SYS_ADMIN).
fn resident_frames(pid: u32) -> Option<HashSet<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    const PAGE: u64 = 4096;
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let mut pagemap = std::fs::File::open(format!("/proc/{pid}/pagemap")).ok()?;
    let mut frames = HashSet::new();
    let mut present = 0u64;
    let mut range: Option<(u64, u64)> = None;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) =
                (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        {
            range = Some((start, end));
            continue;
        }
        if first != "Rss:" || kib_field(line, "Rss") == Some(0) {
            continue;
        }
        let Some((start, end)) = range.take() else {
            continue;
        };
        let mut entries = vec![0u8; ((end - start) / PAGE * 8) as usize];
        if pagemap.seek(SeekFrom::Start(start / PAGE * 8)).is_err()
            || pagemap.read_exact(&mut entries).is_err()
        {
            continue;
        }
        for entry in entries.chunks_exact(8) {
            let entry = u64::from_le_bytes(entry.try_into().unwrap_or_default());
            if entry >> 63 == 1 {
                present += 1;
                frames.insert(entry & ((1 << 55) - 1));
            }
        }
    }
    (present == 0 || frames.len() > 1 || frames.iter().any(|&f| f != 0)).then_some(frames)
}

/// Each resident page of the processes counted once, KiB.
fn unique_kib(pids: &[u32]) -> Option<u64> {
    let mut all = HashSet::new();
    for &pid in pids {
        all.extend(resident_frames(pid)?);
    }
    Some(all.len() as u64 * 4)
}

impl TreeSample {
    pub fn take(root: u32) -> TreeSample {
        let procs = tree(root)
            .into_iter()
            .filter_map(|pid| {
                let s = stat(pid)?;
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                let pss_kib = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
                    .ok()
                    .and_then(|t| kib_field(&t, "Pss"));
                Some(ProcSample {
                    pid,
                    name: name(pid),
                    ticks: s.ticks,
                    rss_kib: kib_field(&status, "VmRSS").unwrap_or(0),
                    pss_kib,
                    threads: sample_threads(pid),
                })
            })
            .collect::<Vec<ProcSample>>();
        let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
        TreeSample {
            unique_kib: unique_kib(&pids),
            procs,
        }
    }

    /// The whole app's resident memory: each page once where the page
    /// frames can be read, else the sum of the processes' RSS (an overcount).
    pub fn resident_kib(&self) -> u64 {
        self.unique_kib.unwrap_or_else(|| self.rss_kib())
    }

    pub fn rss_kib(&self) -> u64 {
        self.procs.iter().map(|p| p.rss_kib).sum()
    }

    /// `None` when some process's PSS could not be read.
    pub fn pss_kib(&self) -> Option<u64> {
        self.procs.iter().map(|p| p.pss_kib).sum()
    }

    pub fn threads(&self) -> usize {
        self.procs.iter().map(|p| p.threads.len()).sum()
    }

    pub fn get(&self, pid: u32) -> Option<&ProcSample> {
        self.procs.iter().find(|p| p.pid == pid)
    }
}

/// MB (10^6 bytes) from KiB.
pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let line = "4242 (Web (Content) x) S 4200 4242 4200 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 9 0 1000 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.ppid, s.ticks), (4200, 287));
    }

    #[test]
    fn kib_fields() {
        let status = "Name:\thark-app\nVmHWM:\t  150000 kB\nVmRSS:\t  123456 kB\n";
        assert_eq!(kib_field(status, "VmRSS"), Some(123_456));
        assert_eq!(kib_field(status, "VmSwap"), None);
        assert_eq!(kib_field("Rss:  10 kB\nPss:  7 kB\n", "Pss"), Some(7));
    }

    #[test]
    fn this_process_is_its_own_tree() {
        let me = std::process::id();
        assert_eq!(tree(me)[0], me);
        let sample = TreeSample::take(me);
        assert!(sample.rss_kib() > 0);
        assert!(sample.threads() >= 1);
    }
}
