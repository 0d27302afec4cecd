//! Confinement's cost: `hark run --agent fake-claude -- "SAY hi"` against
//! one `hark serve`, timed from spawn to the first line of the agent's
//! output on `hark run`'s stdout (and to its exit), confined (bubblewrap,
//! the default) and with `--no-confine`. The two alternate run by run, and
//! which goes first alternates too, so drift in the machine's load hits both
//! alike.
//!
//! Every run must print `hi` first and exit 0, and say on stderr how it was
//! confined: a confined run that says anything but "confined by
//! bubblewrap" (no bwrap here, no user namespaces) fails the bench rather
//! than measure an unconfined run twice.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hark_harness::{Daemon, DaemonError, ProcessError, Sandbox, process};
use serde_json::json;

use crate::logs::{LogFileError, Tail, log_file};
use crate::stats::Summary;

/// Runs of each kind before the measured ones (page cache, bwrap's and
/// the agent's first start).
pub const WARMUP_RUNS: usize = 3;
/// The agent's script: one line of text, nothing else.
const PROMPT: &str = "SAY hi";
/// The first line a correct run prints.
const EXPECTED_LINE: &str = "hi";
/// What `hark run` says on stderr for each kind.
const CONFINED_LABEL: &str = "hark: confined by bubblewrap";
const UNCONFINED_LABEL: &str = "hark: not confined (turned off)";
/// How long one run may take, first line or exit.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// Why the bench could not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error("cannot create {}", path.display())]
    Cwd {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One run failed: which, and the end of its stderr.
    #[error("the {kind} run {run}{stderr}")]
    Run {
        kind: &'static str,
        /// Counting the warm-up runs, from 1.
        run: usize,
        stderr: Tail,
        #[source]
        source: RunError,
    },
    #[error("cannot stop hark serve")]
    Stop(#[source] ProcessError),
}

/// Why one run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error("cannot start hark run")]
    Spawn(#[source] std::io::Error),
    #[error("hark run has no stdout pipe")]
    NoStdout,
    #[error("printed nothing within {RUN_TIMEOUT:?}")]
    NoOutput,
    #[error("printed {0:?} first, not {EXPECTED_LINE:?}")]
    WrongOutput(String),
    #[error("did not exit within {RUN_TIMEOUT:?}")]
    NoExit,
    #[error("exited with {0}")]
    Exited(ExitStatus),
    #[error("did not say {expected:?} on stderr")]
    Label { expected: &'static str },
}

/// One kind of run: what it adds to `hark run`, and its samples.
#[derive(Debug)]
pub struct Kind {
    pub label: &'static str,
    flags: &'static [&'static str],
    stderr_label: &'static str,
    first_output: Vec<Duration>,
    exit: Vec<Duration>,
}

impl Kind {
    fn new(
        label: &'static str,
        flags: &'static [&'static str],
        stderr_label: &'static str,
    ) -> Kind {
        Kind {
            label,
            flags,
            stderr_label,
            first_output: Vec::new(),
            exit: Vec::new(),
        }
    }

    /// Spawn → the first line of the agent's output.
    pub fn first_output(&self) -> Option<Summary> {
        Summary::of_durations(&self.first_output)
    }

    /// Spawn → `hark run`'s exit.
    pub fn exit(&self) -> Option<Summary> {
        Summary::of_durations(&self.exit)
    }
}

/// What the bench measured.
#[derive(Debug)]
pub struct Results {
    pub runs: usize,
    pub confined: Kind,
    pub unconfined: Kind,
    pub daemon_clean_exit: bool,
}

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    first_output: Duration,
    exit: Duration,
}

/// Starts `hark serve` in the sandbox and runs each kind `runs` times,
/// interleaved, after [`WARMUP_RUNS`] of each.
pub fn measure(sandbox: &Sandbox, runs: usize) -> Result<Results, ConfineError> {
    let daemon = Daemon::start(sandbox, &json!({}), &[])?;
    // Outside /tmp, like a project: a confined agent's /tmp is its own.
    let cwd = sandbox.path("project");
    std::fs::create_dir_all(&cwd).map_err(|source| ConfineError::Cwd {
        path: cwd.clone(),
        source,
    })?;
    let mut confined = Kind::new("confined (bubblewrap)", &[], CONFINED_LABEL);
    let mut unconfined = Kind::new("--no-confine", &["--no-confine"], UNCONFINED_LABEL);
    for i in 0..WARMUP_RUNS + runs {
        let order = match i % 2 {
            0 => [&mut confined, &mut unconfined],
            _ => [&mut unconfined, &mut confined],
        };
        for kind in order {
            let log = sandbox.path("hark-run.stderr");
            let sample =
                run_once(sandbox, &cwd, kind, &log).map_err(|source| ConfineError::Run {
                    kind: kind.label,
                    run: i + 1,
                    stderr: Tail::of_file("its", &log),
                    source,
                })?;
            if i >= WARMUP_RUNS {
                kind.first_output.push(sample.first_output);
                kind.exit.push(sample.exit);
            }
        }
    }
    let daemon_clean_exit = daemon.stop().map_err(ConfineError::Stop)?;
    Ok(Results {
        runs,
        confined,
        unconfined,
        daemon_clean_exit,
    })
}

fn run_once(sandbox: &Sandbox, cwd: &Path, kind: &Kind, log: &Path) -> Result<Sample, RunError> {
    let stderr = log_file(log)?;
    let mut command = sandbox.hark(["run", "--agent"]);
    command
        .arg(sandbox.bin("fake-claude"))
        .args(kind.flags)
        .args(["--", PROMPT])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr));
    let spawned = Instant::now();
    let mut child = command.spawn().map_err(RunError::Spawn)?;
    let stdout = child.stdout.take().ok_or(RunError::NoStdout)?;
    // A reader thread stamps the first line the moment it is read, and
    // reads the rest so the run never blocks on a full pipe.
    let (first_tx, first) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = first_tx.send((Instant::now(), line));
        }
        lines.for_each(drop);
    });
    let first = first.recv_timeout(RUN_TIMEOUT);
    let status = process::wait_or_kill(&mut child, RUN_TIMEOUT);
    let exited = Instant::now();
    let _ = reader.join();
    let (at, line) = first.map_err(|_| RunError::NoOutput)?;
    if line != EXPECTED_LINE {
        return Err(RunError::WrongOutput(line));
    }
    match status {
        None => return Err(RunError::NoExit),
        Some(status) if !status.success() => return Err(RunError::Exited(status)),
        Some(_) => {}
    }
    let said = std::fs::read_to_string(log).unwrap_or_default();
    if !said.lines().any(|l| l.starts_with(kind.stderr_label)) {
        return Err(RunError::Label {
            expected: kind.stderr_label,
        });
    }
    Ok(Sample {
        first_output: at - spawned,
        exit: exited - spawned,
    })
}

/// What confinement may add to the median spawn → first output, in ms.
pub const TARGET_ADDED_MS: f64 = 20.0;

/// Prints the table and the final JSON line; whether everything measured
/// was sound (it always is when [`measure`] returned: a wrong run fails it).
pub fn report(r: &Results) -> bool {
    let (Some(c_first), Some(u_first), Some(c_exit), Some(u_exit)) = (
        r.confined.first_output(),
        r.unconfined.first_output(),
        r.confined.exit(),
        r.unconfined.exit(),
    ) else {
        println!("  nothing was measured");
        return false;
    };
    println!(
        "confinement: {} runs each of `hark run --agent fake-claude -- {PROMPT:?}` against hark serve, alternating (after {WARMUP_RUNS} warm-up runs each)\n  ms from spawn: median (min, p90)",
        r.runs
    );
    println!(
        "  {:<24} {:>30} {:>30} {:>18}",
        "", r.confined.label, r.unconfined.label, "added (p50, p90)"
    );
    for (what, c, u) in [
        ("→ the agent's first line", c_first, u_first),
        ("→ hark run's exit", c_exit, u_exit),
    ] {
        println!(
            "  {what:<24} {:>30} {:>30} {:>18}",
            crate::timing(c),
            crate::timing(u),
            format!("{:+.2}, {:+.2}", c.p50 - u.p50, c.p90 - u.p90)
        );
    }
    println!(
        "  daemon exited cleanly on SIGTERM: {}",
        crate::yes_no(r.daemon_clean_exit)
    );
    println!();
    let added = c_first.p50 - u_first.p50;
    let ok = added <= TARGET_ADDED_MS;
    println!("targets");
    println!(
        "  {:<48} {:>10}  {}",
        format!("confinement adds ≤ {TARGET_ADDED_MS} ms to the median first line"),
        format!("{added:.2} ms"),
        crate::pass(ok)
    );
    let round = crate::stats::round3;
    let kind = |k: &Kind| {
        json!({
            "first_output_ms": k.first_output().map(Summary::to_json),
            "exit_ms": k.exit().map(Summary::to_json),
        })
    };
    let report = json!({
        "confinement": {
            "runs": r.runs,
            "warmup_runs": WARMUP_RUNS,
            "prompt": PROMPT,
            "confined": kind(&r.confined),
            "unconfined": kind(&r.unconfined),
            "added_first_output_ms": {"p50": round(added), "p90": round(c_first.p90 - u_first.p90)},
            "added_exit_ms": {"p50": round(c_exit.p50 - u_exit.p50), "p90": round(c_exit.p90 - u_exit.p90)},
            "daemon_clean_exit": r.daemon_clean_exit,
        },
        "targets": {
            "added_first_output_ms_max": {"target": TARGET_ADDED_MS, "value": round(added), "pass": ok},
        },
        "sound": r.daemon_clean_exit,
    });
    println!("{report}");
    r.daemon_clean_exit
}
