//! `hark-desktop-bench`: measures the desktop app (`hark-app`) against its
//! promises, on a private desktop (run it under `xvfb-run`; see
//! `bench/desktop`):
//!
//! 1. Latency: sequential asks; ask → `Notify` on the bus and ask → the
//!    modal showing the options (`modal.shown`).
//! 2. Idle: nothing pending for a while; the CPU of the app's whole process
//!    tree (the app and its WebKit processes) as a share of one core, and
//!    every thread's wake-ups.
//! 3. Memory: the resident set of that tree with 1 item pending, then 50.
//!
//! Everything runs in a temp dir with its own session bus and notification
//! server. It prints a table, PASS/MISS against the targets, and one final
//! JSON line. The exit code is 1 when something was wrong (a failed run, an
//! event that never came, a process left behind), not when a target is missed.
//!
//! # Layout
//!
//! - this file: the options, and the run: checks, the measurements in
//!   order, the final JSON line; `error` is why a run could not finish.
//! - `desktop`: the session and the app on it; `asker` an agent's side of
//!   the app socket; `procs` the app's process tree from `/proc`.
//! - `latency`, `idle`, `memory`: the measurements.
//! - `targets`: the promises and the verdicts; `report`: the tables and
//!   the sections of the JSON line.

mod asker;
mod desktop;
mod error;
mod idle;
mod latency;
mod memory;
mod procs;
mod report;
mod smaps;
mod targets;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;

use crate::desktop::{Desktop, Shutdown, Startup};
use crate::error::Error;
use crate::procs::TreeSample;
use crate::targets::Targets;
use hark_bench::args::{Args, ArgsError, at_least, bin_dir};
use hark_bench::stats::Summary;
use hark_harness::desktop::installed;
use hark_harness::{Report, Sandbox};

const USAGE: &str = "\
usage: hark-desktop-bench [--asks N] [--idle-secs S] [--pending N] [--bin-dir DIR]

  --asks N       sequential asks in the latency measurement (default 20; 1000
                 for a day's worth, after which the idle is measured again)
  --idle-secs S  the idle window, in seconds (default 60)
  --pending N    items held pending in the memory measurement (default 50, at least 2)
  --bin-dir DIR  where `hark`, `hark-app` and `hark-window` are (default: this executable's directory)

Run it on an X display: xvfb-run -a -s \"-screen 0 1280x800x24\" hark-desktop-bench";

#[derive(Debug)]
struct Options {
    asks: usize,
    idle_secs: u64,
    pending: usize,
    bin_dir: PathBuf,
}

fn parse_args() -> Result<Options, ArgsError> {
    let mut options = Options {
        asks: 20,
        idle_secs: 60,
        pending: 50,
        bin_dir: PathBuf::new(),
    };
    let mut given_bin_dir = None;
    let mut args = Args::from_env();
    while let Some(flag) = args.next_flag() {
        match flag.name.as_str() {
            "--asks" => options.asks = args.number(&flag)?,
            "--idle-secs" => options.idle_secs = args.number(&flag)? as u64,
            "--pending" => options.pending = args.number(&flag)?,
            "--bin-dir" => given_bin_dir = Some(PathBuf::from(args.value(&flag)?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(flag.unknown(USAGE)),
        }
    }
    at_least("--asks", 1, options.asks)?;
    at_least("--idle-secs", 1, options.idle_secs as usize)?;
    at_least("--pending", 2, options.pending)?;
    options.bin_dir = bin_dir(given_bin_dir)?;
    Ok(options)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(asker::ASKER_ROLE) {
        return match asker::serve_as_child(&args[1..]) {
            true => ExitCode::SUCCESS,
            false => ExitCode::FAILURE,
        };
    }
    let result = parse_args()
        .map_err(Error::from)
        .and_then(|options| run(&options));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hark-desktop-bench: {}", Report(&e));
            ExitCode::FAILURE
        }
    }
}

fn progress(what: &str) {
    eprintln!("hark-desktop-bench: {what}");
}

/// Everything one run measured.
#[derive(Debug)]
struct Measured {
    startup: Startup,
    /// The app's processes once it had started.
    tree_at_start: TreeSample,
    /// The whole app idle before any question (no window yet), once quiet.
    fresh: TreeSample,
    lat: latency::Results,
    /// Ask → `Notify`, and ask → `modal.shown` (when the app logs it).
    notify: Summary,
    modal: Option<Summary>,
    idle: idle::Results,
    mem: memory::Results,
    shutdown: Shutdown,
}

impl Measured {
    /// What was measured wrong, as the report says it.
    fn wrong(&self) -> Vec<String> {
        let lat = &self.lat;
        let mut wrong = Vec::new();
        if lat.skipped != lat.asks.len() {
            wrong.push(format!(
                "{} of {} skipped items did not settle as skipped",
                lat.asks.len() - lat.skipped,
                lat.asks.len()
            ));
        }
        if let Some(why) = &lat.modal_missing {
            wrong.push(why.to_string());
        }
        if !self.shutdown.leftovers.is_empty() {
            wrong.push("processes outlived the app".into());
        }
        wrong
    }
}

/// The machine the run is on.
#[derive(Debug)]
struct Machine {
    display: String,
    cpus: usize,
    load_before: String,
    ticks_per_s: u64,
}

/// Runs everything and prints the report; `Ok(false)` when something measured was wrong.
fn run(options: &Options) -> Result<bool, Error> {
    let (app, display) = check_setup(options)?;
    let ticks_per_s = procs::clock_ticks()?;
    let sandbox = Sandbox::new("hark-desktop-bench-", &options.bin_dir)?;
    let machine = Machine {
        display,
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before: load_average(),
        ticks_per_s,
    };
    println!(
        "hark-desktop-bench: binaries in {}",
        options.bin_dir.display()
    );
    println!(
        "  display {}, a private session bus with dunst; {} CPUs, load average {} at the start; CLK_TCK {ticks_per_s}",
        machine.display, machine.cpus, machine.load_before
    );
    println!();

    let measured = measure(&sandbox, &app, options, ticks_per_s)?;
    let load_after = load_average();
    report::print_shutdown(&measured.shutdown, &load_after);

    let targets = Targets::of(&measured);
    targets.print(&measured, options.pending);
    let wrong = measured.wrong();
    let sound = wrong.is_empty();
    for why in &wrong {
        println!("  WRONG: {why}");
    }
    if !sound {
        println!("  something measured was WRONG (see above): exit code 1");
    }

    let report = json!({
        "machine": {
            "cpus": machine.cpus,
            "load_average_start": machine.load_before,
            "load_average_end": load_after,
            "clk_tck": machine.ticks_per_s,
        },
        "startup": report::startup_json(&measured),
        "latency": report::latency_json(&measured),
        "idle": report::idle_json(&measured.idle),
        "memory": report::memory_json(&measured.mem, &targets),
        "shutdown": {
            "app_status": measured.shutdown.app_status,
            "leftovers": measured.shutdown.leftovers,
        },
        "targets": targets.to_json(&measured),
        "sound": sound,
    });
    println!("{report}");
    Ok(sound)
}

/// The app's path and the X display, once the binaries, the tools and the
/// display are all there.
fn check_setup(options: &Options) -> Result<(PathBuf, String), Error> {
    let hark = options.bin_dir.join("hark");
    let app = options.bin_dir.join("hark-app");
    let window = options.bin_dir.join("hark-window");
    for binary in [&hark, &app, &window] {
        if !binary.is_file() {
            return Err(Error::Missing(binary.clone()));
        }
    }
    for tool in hark_harness::desktop::TOOLS
        .into_iter()
        .chain(desktop::TOOLS)
    {
        if !installed(tool) {
            return Err(Error::NotInstalled(tool));
        }
    }
    let display = std::env::var("DISPLAY").unwrap_or_default();
    if display.is_empty() {
        return Err(Error::NoDisplay);
    }
    Ok((app, display))
}

/// Starts the desktop and measures latency, idleness and memory on it,
/// printing each as it is done; then stops it.
fn measure(
    sandbox: &Sandbox,
    app: &Path,
    options: &Options,
    ticks_per_s: u64,
) -> Result<Measured, Error> {
    progress("starting the bus, dunst and hark-app");
    let mut desktop = Desktop::start(sandbox, app)?;
    let startup = desktop.startup;
    let tree_at_start = TreeSample::take(desktop.app_pid);
    report::print_startup(&desktop, &tree_at_start);
    progress("fresh idle: the app before any question");
    let fresh_breakdown = memory::settled_breakdown(&desktop, ticks_per_s);
    let fresh = TreeSample::take(desktop.app_pid);
    smaps::print(
        "hark-app idle before any question (no window yet)",
        &fresh_breakdown,
    );

    progress(&format!("latency: {} asks", options.asks));
    let lat = latency::measure(&desktop, ticks_per_s, options.asks)?;
    let notify = Summary::of(&lat.column(|a| Some(a.notify_ms))).ok_or(Error::NoAsks)?;
    let modal = Summary::of(&lat.column(|a| a.modal_ms));
    report::print_latency(&lat, options.asks);

    progress(&format!("idle: {} s", options.idle_secs));
    let shown = lat.asks.iter().any(|a| a.window_ms.is_some());
    let idle = idle::measure(
        &desktop,
        ticks_per_s,
        options.idle_secs,
        shown.then_some(lat.last_settle_from),
    )?;
    report::print_idle(&idle);

    progress(&format!("memory: 1, then {} pending", options.pending));
    let mem = memory::measure(
        &desktop,
        ticks_per_s,
        options.pending,
        lat.modal_missing.is_none(),
    )?;
    report::print_memory(&mem);
    smaps::print(
        "hark-app idle after the asks (nothing pending, window released)",
        &mem.after_breakdown,
    );

    progress("stopping");
    let shutdown = desktop.stop();
    drop(desktop);
    Ok(Measured {
        startup,
        tree_at_start,
        fresh,
        lat,
        notify,
        modal,
        idle,
        mem,
        shutdown,
    })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
