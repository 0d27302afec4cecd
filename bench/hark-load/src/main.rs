//! `hark-load`: starts the real daemon (`hark serve` with a scripted
//! operator, in a sandbox) and abuses it the way a stuck or hostile local
//! client could, then reports what the daemon held before, under and after.
//!
//! ```text
//! cargo build --release -p hark -p hark-load
//! target/release/hark-load --half-frames 500 --idle 10000 --asks 200
//! ```
//!
//! The abuse, held all at once:
//! - (a) `--half-frames` connections that each stall in the middle of a
//!   frame (half of them the first frame, half a frame after `subscribe`),
//!   from child processes of at most `--per-child` connections each, so the
//!   per-process limit lets them all in;
//! - (b) `--idle` connections from one child that send nothing (the
//!   per-process limit should turn most away at once);
//! - (c) `--asks` concurrent asks with a `--ask-timeout` that nobody answers;
//! - (d) one ask the operator answers at once, timed.
//!
//! Then the crowds are let go, and the daemon's file handles are waited on
//! (polled, with a patience) to come back to where they started.
//!
//! # Layout
//! - `hold`: the abusive child (`hark-load hold`).
//! - `asks`: the short asks and the answered one.
//! - `proc`: `/proc/<pid>` readings, the settle wait, the fd limit.
//! - `report`: the table.

mod asks;
mod hold;
mod proc;
mod report;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;
use hark_harness::{Daemon, Report, Sandbox};
use serde_json::json;

use crate::hold::{HoldArgs, Tally};
use crate::proc::Sample;
use crate::report::Figures;

#[derive(Debug, Parser)]
#[command(name = "hark-load", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    load: LoadArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// One abusive crowd (run by hark-load itself as a child).
    #[command(hide = true)]
    Hold(HoldArgs),
}

#[derive(Debug, clap::Args)]
struct LoadArgs {
    /// Connections that stall in the middle of a frame.
    #[arg(long, default_value_t = 500)]
    half_frames: usize,
    /// Connections from one process that send nothing.
    #[arg(long, default_value_t = 10_000)]
    idle: usize,
    /// Concurrent asks nobody answers.
    #[arg(long, default_value_t = 200)]
    asks: usize,
    /// Their timeout, in seconds.
    #[arg(long, default_value_t = 2.0)]
    ask_timeout: f64,
    /// At most this many half-frame connections per child process (under
    /// the daemon's per-process limit of 256).
    #[arg(long, default_value_t = 250)]
    per_child: usize,
    /// Seconds to wait for the daemon to drop the crowds, and to settle.
    #[arg(long, default_value_t = 30)]
    patience: u64,
    /// Where `hark` is; the directory of this executable when absent.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

/// Why a load run failed.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("cannot find this executable")]
    OwnPath(#[source] std::io::Error),
    #[error(transparent)]
    Sandbox(#[from] hark_harness::SandboxError),
    #[error(transparent)]
    Daemon(#[from] hark_harness::DaemonError),
    #[error(transparent)]
    Proc(#[from] proc::ProcError),
    #[error("cannot start a crowd")]
    Spawn(#[source] std::io::Error),
    #[error("a crowd exited without its tally")]
    NoTally,
    #[error(transparent)]
    Answered(#[from] asks::NotAnswered),
    #[error("cannot start a runtime")]
    Runtime(#[source] std::io::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Sub::Hold(args)) = cli.command {
        proc::raise_open_files();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let tally = runtime.block_on(hold::hold(args));
        println!("{}", tally.to_json());
        return ExitCode::SUCCESS;
    }
    match load(&cli.load) {
        Ok(figures) => {
            print!("{figures}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hark-load: {}", Report(&e));
            ExitCode::FAILURE
        }
    }
}

/// A running crowd: its child and where its tally will come from.
struct Crowd {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Crowd {
    /// Starts `hark-load hold` and waits until its connections are made.
    fn start(args: &[String]) -> Result<Crowd, LoadError> {
        let exe = std::env::current_exe().map_err(LoadError::OwnPath)?;
        let mut child = Command::new(exe)
            .arg("hold")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(LoadError::Spawn)?;
        let stdout = child.stdout.take().ok_or(LoadError::NoTally)?;
        let mut lines = std::io::BufReader::new(stdout).lines();
        match lines.next() {
            Some(Ok(line)) if line == "ready" => Ok(Crowd { child, lines }),
            _ => Err(LoadError::NoTally),
        }
    }

    /// Waits for its tally (it ends once the daemon has dropped every connection).
    fn tally(mut self) -> Result<Tally, LoadError> {
        let line = self
            .lines
            .next()
            .and_then(Result::ok)
            .ok_or(LoadError::NoTally)?;
        let _ = self.child.wait();
        let value = serde_json::from_str(&line).map_err(|_| LoadError::NoTally)?;
        Ok(Tally::from_json(&value))
    }
}

fn crowd_args(socket: &std::path::Path, count: usize, mode: &str, patience: u64) -> Vec<String> {
    [
        "--socket",
        &socket.display().to_string(),
        "--count",
        &count.to_string(),
        "--mode",
        mode,
        "--patience",
        &patience.to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Samples the daemon every 20 ms until told to stop; the highest readings.
fn watch_peak(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Sample> {
    std::thread::spawn(move || {
        let mut peak = Sample::default();
        while !stop.load(Ordering::Relaxed) {
            if let Ok(now) = proc::sample(pid) {
                peak.rss_kib = peak.rss_kib.max(now.rss_kib);
                peak.peak_kib = peak.peak_kib.max(now.peak_kib);
                peak.fds = peak.fds.max(now.fds);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    })
}

fn load(args: &LoadArgs) -> Result<Figures, LoadError> {
    let bin_dir = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_exe()
            .map_err(LoadError::OwnPath)?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default(),
    };
    let sandbox = Sandbox::new("hark-load-", &bin_dir)?;
    let daemon = Daemon::start(&sandbox, &json!({ asks::ANSWERED: "Yes" }), &[])?;
    let pid = daemon.pid();
    // After the daemon started: it keeps the limit it was given.
    let own_limit = proc::raise_open_files();
    let before = proc::sample(pid)?;
    let stop = Arc::new(AtomicBool::new(false));
    let peak = watch_peak(pid, stop.clone());
    let socket = sandbox.socket();

    let mut crowds = Vec::new();
    let mut left = args.half_frames;
    let mut subscribed = false;
    while left > 0 {
        let n = left.min(args.per_child.max(1));
        let mode = if subscribed {
            "subscribed-half"
        } else {
            "half"
        };
        crowds.push(Crowd::start(&crowd_args(&socket, n, mode, args.patience))?);
        subscribed = !subscribed;
        left -= n;
    }
    let idle = Crowd::start(&crowd_args(&socket, args.idle, "idle", args.patience))?;
    let held = proc::sample(pid)?;

    let runtime = tokio::runtime::Runtime::new().map_err(LoadError::Runtime)?;
    let timeout = Duration::from_secs_f64(args.ask_timeout);
    let (timeouts, answered) = runtime.block_on(async {
        let short = asks::timeouts(&socket, args.asks, timeout);
        tokio::join!(short, asks::answered(&socket))
    });
    let answered = answered?;

    let mut half = Tally::default();
    for crowd in crowds {
        half = half.add(crowd.tally()?);
    }
    let idle = idle.tally()?;
    stop.store(true, Ordering::Relaxed);
    let peak = peak.join().unwrap_or_default();
    let patience = Duration::from_secs(args.patience);
    let (after, settled) = proc::settle(pid, before.fds, patience)?;
    let daemon_limit = proc::open_files_limit(pid);
    let _ = daemon.stop();
    Ok(Figures {
        before,
        held,
        peak,
        after,
        settled,
        half,
        idle,
        idle_sent: args.idle,
        half_sent: args.half_frames,
        timeouts,
        ask_timeout: timeout,
        answered,
        own_limit,
        daemon_limit,
    })
}
