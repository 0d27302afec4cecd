//! `hark-bench`: measures `hark mcp-operator-ask` against its promises.
//!
//! 1. Cold start: spawn → `initialize` response and spawn → `tools/list`
//!    response of the server agents are pointed at (`hark-ask`, else
//!    `hark`), against `bare-ask-server` (the least an rmcp stdio server
//!    with one tool can be); peak RSS; nothing but JSON-RPC on stdout.
//!    `--guard RATIO`: that alone, as the test command's regression guard.
//! 2. Round trip: sequential `tools/call ask` through `hark serve
//!    --prompter script:…`, which answers at once.
//!
//! With `--inbox` it runs only the inbox under load instead: many clients
//! ask at once, and every question is answered with `hark answer` (see
//! [`inbox`]); the exit code is 1 when a question was lost, answered wrong
//! or answered twice.
//!
//! With `--confine` it runs only confinement's cost instead: `hark run` of
//! the fake agent from spawn to its first output, confined and with
//! `--no-confine`, alternating (see [`confine`]).
//!
//! With `--hooks` it runs only the terminal hooks' cost with no daemon:
//! `hark hook permission-request` and `post-tool-use` from spawn to exit,
//! against `/bin/true` (see [`hooks`]).
//!
//! With `--hub` it runs only the team's hub under load instead: three
//! operators' daemons on one nats-server, many idle agent-only hosts
//! connected, a burst of asks answered from another daemon, against the
//! same asks on one daemon with no hub, and the same again on the same
//! daemons (see [`hub`]); the exit code is 1 when an ask was lost, answered
//! wrong or answered twice.
//!
//! It prints a table, PASS/MISS against the targets, and one final JSON line.
//! The exit code is 1 when something was wrong (a failed run, a wrong answer,
//! non-protocol output on stdout), not when a target is missed.
//!
//! # Layout
//!
//! - this file: the options, the default run (cold start, round trip, the
//!   targets and the report) and the crate's `Error`, printed with its
//!   causes in one place, `main`.
//! - `cold`, `roundtrip`: the two measurements (`guard`: the cold start's
//!   `--guard`); `rpc` drives a child MCP
//!   server over its pipes; `logs` is where a child's stderr goes and the
//!   end of it shown under an error.
//! - `inbox`: the `--inbox` mode, a folder of its own.
//! - `confine`: the `--confine` mode.
//! - `hooks`: the `--hooks` mode.
//! - `hub`: the `--hub` mode, a folder of its own.

mod cold;
mod confine;
mod guard;
mod hooks;
mod hub;
mod inbox;
mod logs;
mod roundtrip;
mod rpc;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use hark_bench::args::{Args, ArgsError, at_least, bin_dir};
use hark_bench::stats;
use hark_bench::stats::{Summary, round3};
use hark_harness::{Report, Sandbox, SandboxError};

use crate::cold::ColdError;
use crate::confine::ConfineError;
use crate::hooks::HooksError;
use crate::hub::HubError;
use crate::inbox::InboxError;
use crate::roundtrip::RoundTripError;

/// Cold start: hark's medians may be at most this many times bare's.
const TARGET_COLD_RATIO: f64 = 1.1;
/// Peak RSS of the agent's server, in MB (10^6 bytes).
const TARGET_RSS_MB: f64 = 10.0;
/// Round trip p99, in ms.
const TARGET_P99_MS: f64 = 5.0;
const MIN_RUNS: usize = 20;
/// `--runs` of `--confine` unless given.
const CONFINE_RUNS: usize = 100;
/// `--idle` and `--asks` of `--hub` unless given.
const HUB_IDLE: usize = 1000;
const HUB_ASKS: usize = 100;

const USAGE: &str = "\
usage: hark-bench [--runs N] [--calls N] [--bin-dir DIR] [--via-hark]
       hark-bench --guard RATIO [--runs N] [--bin-dir DIR] [--via-hark]
       hark-bench --inbox [--clients N] [--items-per-client N] [--bin-dir DIR]
       hark-bench --confine [--runs N] [--bin-dir DIR]
       hark-bench --hooks [--runs N] [--bin-dir DIR]
       hark-bench --hub [--idle N] [--idle-processes N] [--asks N] [--bin-dir DIR]

  --runs N       cold-start runs per server, interleaved (default 30, at least 20)
  --calls N      sequential ask calls in the round trip (default 500)
  --bin-dir DIR  where `hark` and `bare-ask-server` are (default: this executable's directory)
  --via-hark     time `hark mcp-operator-ask`, not `hark-ask` (what agents are pointed at)

  --guard RATIO  only the cold start, as the test command's regression guard: up to 3
                 rounds of N interleaved runs (default 20); fails unless a round's
                 medians are within RATIO of the bare server's

  --inbox               only the inbox under load: N clients (`hark mcp-operator-ask`)
                        each ask M questions at once, all answered with `hark answer`
  --clients N           concurrent clients (default 100)
  --items-per-client N  questions each client asks at once (default 10)

  --confine      only confinement's cost: `hark run` of `fake-claude` (beside `hark`)
                 from spawn to its first output, confined and with --no-confine,
                 alternating, N runs each (default 100, at least 20)

  --hooks        only the terminal hooks' cost with no daemon (`hark hook
                 permission-request`, `post-tool-use`) against /bin/true
  --hub                 only the team's hub under load: 3 operator daemons on one
                        nats-server, N idle agents connected, M concurrent asks spread
                        over the daemons, each answered from another daemon; against
                        the same asks on one daemon with no hub; then the same again on
                        the same daemons, reported beside
  --idle N              idle agent-only hosts connected (default 1000)
  --idle-processes N    at most N of them real `hark mcp-operator-ask --hub` processes
                        (default: all that fit in memory); the rest are emulated
  --asks N              concurrent asks (default 100)";

#[derive(Debug)]
struct Options {
    runs: usize,
    calls: usize,
    bin_dir: PathBuf,
    inbox: bool,
    confine: bool,
    hooks: bool,
    hub: bool,
    clients: usize,
    items_per_client: usize,
    hub_plan: hub::Plan,
    guard: Option<f64>,
    via_hark: bool,
}

/// Why the benchmark could not run to the end.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Args(#[from] ArgsError),
    #[error(
        "{} is missing; build with `cargo build --release {build}` or pass --bin-dir",
        binary.display()
    )]
    Missing {
        binary: PathBuf,
        build: &'static str,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Cold(#[from] ColdError),
    #[error("the cold start measured nothing")]
    NothingMeasured,
    #[error(transparent)]
    RoundTrip(#[from] RoundTripError),
    #[error(transparent)]
    Inbox(#[from] InboxError),
    #[error(transparent)]
    Confine(#[from] ConfineError),
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error(transparent)]
    Hooks(#[from] HooksError),
}

fn parse_args() -> Result<Options, ArgsError> {
    let mut runs = None;
    let mut calls = 500;
    let mut given_bin_dir = None;
    let mut inbox = false;
    let mut confine = false;
    let mut hooks = false;
    let mut clients = 100;
    let mut items_per_client = 10;
    let mut hub = false;
    let mut idle = HUB_IDLE;
    let mut idle_processes = None;
    let mut asks = HUB_ASKS;
    let mut guard = None;
    let mut via_hark = false;
    let mut args = Args::from_env();
    while let Some(flag) = args.next_flag() {
        match flag.name.as_str() {
            "--runs" => runs = Some(args.number(&flag)?),
            "--calls" => calls = args.number(&flag)?,
            "--bin-dir" => given_bin_dir = Some(PathBuf::from(args.value(&flag)?)),
            "--inbox" if flag.inline.is_none() => inbox = true,
            "--confine" if flag.inline.is_none() => confine = true,
            "--hooks" if flag.inline.is_none() => hooks = true,
            "--clients" => clients = args.number(&flag)?,
            "--items-per-client" => items_per_client = args.number(&flag)?,
            "--hub" if flag.inline.is_none() => hub = true,
            "--idle" => idle = args.number(&flag)?,
            "--idle-processes" => idle_processes = Some(args.number(&flag)?),
            "--asks" => asks = args.number(&flag)?,
            "--guard" => guard = Some(args.ratio(&flag)?),
            "--via-hark" if flag.inline.is_none() => via_hark = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(flag.unknown(USAGE)),
        }
    }
    Ok(Options {
        runs: at_least(
            "--runs",
            MIN_RUNS,
            runs.unwrap_or(match (confine, guard) {
                (true, _) => CONFINE_RUNS,
                (false, Some(_)) => MIN_RUNS,
                (false, None) => 30,
            }),
        )?,
        calls: at_least("--calls", 1, calls)?,
        bin_dir: bin_dir(given_bin_dir)?,
        inbox,
        confine,
        hooks,
        clients: at_least("--clients", 1, clients)?,
        items_per_client: at_least("--items-per-client", 1, items_per_client)?,
        hub,
        hub_plan: hub::Plan {
            idle,
            idle_processes: idle_processes.unwrap_or(idle),
            asks: at_least("--asks", 1, asks)?,
        },
        guard,
        via_hark,
    })
}

fn main() -> ExitCode {
    let result = parse_args().map_err(Error::from).and_then(|options| {
        if let Some(limit) = options.guard {
            run_guard(&options, limit)
        } else if options.inbox {
            run_inbox(&options)
        } else if options.confine {
            run_confine(&options)
        } else if options.hooks {
            run_hooks(&options)
        } else if options.hub {
            run_hub(&options)
        } else {
            run(&options)
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hark-bench: {}", Report(&e));
            ExitCode::FAILURE
        }
    }
}

/// Checks the binaries are built, and lays out the sandbox in a temp dir
/// (removed when it drops).
fn prepare(options: &Options, binaries: &[&Path], build: &'static str) -> Result<Sandbox, Error> {
    if let Some(missing) = binaries.iter().find(|b| !b.is_file()) {
        return Err(Error::Missing {
            binary: missing.to_path_buf(),
            build,
        });
    }
    let sandbox = Sandbox::new("hark-bench-", &options.bin_dir)?;
    println!("hark-bench: binaries in {}", options.bin_dir.display());
    println!();
    Ok(sandbox)
}

/// Runs the cold start and the round trip and prints the report;
/// `Ok(false)` when something measured was wrong.
fn run(options: &Options) -> Result<bool, Error> {
    let (server, bare) = cold::subjects(&options.bin_dir, options.via_hark);
    let sandbox = prepare(options, &[&server.program, &bare], "--workspace")?;

    // (a) Cold start. Both run in the sandbox: hark finds no config, and
    // nothing listens on its socket.
    let cold = ColdStart::measure(&sandbox, server, bare, options.runs)?;
    cold.print(options.runs);

    // (b) Round trip.
    let rt = roundtrip::measure(&sandbox, options.calls)?;
    print_round_trip(&rt);

    let targets = Targets::of(&cold, &rt);
    targets.print(&cold, &rt);
    let sound = cold.hark.stdout_clean
        && cold.bare.stdout_clean
        && rt.stdout_clean
        && rt.correct == rt.calls.n
        && rt.daemon_clean_exit;
    if !sound {
        println!("  something measured was WRONG (see above): exit code 1");
    }
    let report = json!({
        "cold_start": cold.to_json(options.runs),
        "round_trip": round_trip_json(&rt),
        "targets": targets.to_json(&cold, &rt),
        "sound": sound,
    });
    println!("{report}");
    Ok(sound)
}

/// `--guard RATIO`: the cold start alone, as a regression guard.
fn run_guard(options: &Options, limit: f64) -> Result<bool, Error> {
    let (mut server, bare) = cold::subjects(&options.bin_dir, options.via_hark);
    let sandbox = prepare(options, &[&server.program, &bare], "--workspace")?;
    server.stderr_log = sandbox.path("cold-hark.stderr");
    let bare = cold::bare_subject(&sandbox, bare);
    Ok(guard::run(&sandbox, &server, &bare, options.runs, limit)?)
}

/// Both servers' cold starts, summarized.
#[derive(Debug)]
struct ColdStart {
    /// The server timed (`hark-ask mcp-operator-ask` or `hark mcp-operator-ask`).
    label: &'static str,
    hark: cold::Results,
    bare: cold::Results,
    hark_init: Summary,
    hark_list: Summary,
    bare_init: Summary,
    bare_list: Summary,
    /// hark's median over bare's, to the `initialize` response and to the
    /// `tools/list` one.
    ratio_init: f64,
    ratio_list: f64,
    /// Peak RSS, in MB.
    hark_rss: Option<f64>,
    bare_rss: Option<f64>,
}

impl ColdStart {
    fn measure(
        sandbox: &Sandbox,
        mut hark_subject: cold::Subject,
        bare: PathBuf,
        runs: usize,
    ) -> Result<ColdStart, Error> {
        hark_subject.stderr_log = sandbox.path("cold-hark.stderr");
        let bare_subject = cold::bare_subject(sandbox, bare);
        let (h, b) = cold::measure(sandbox, &hark_subject, &bare_subject, runs)?;
        let (hark_init, hark_list, bare_init, bare_list) = match (
            h.initialize(),
            h.tools_list(),
            b.initialize(),
            b.tools_list(),
        ) {
            (Some(a), Some(b), Some(c), Some(d)) => (a, b, c, d),
            _ => return Err(Error::NothingMeasured),
        };
        let mb = |kib: Option<u64>| kib.map(|k| k as f64 * 1024.0 / 1e6);
        Ok(ColdStart {
            label: hark_subject.label,
            ratio_init: hark_init.p50 / bare_init.p50,
            ratio_list: hark_list.p50 / bare_list.p50,
            hark_rss: mb(h.peak_rss_kib),
            bare_rss: mb(b.peak_rss_kib),
            hark: h,
            bare: b,
            hark_init,
            hark_list,
            bare_init,
            bare_list,
        })
    }

    fn print(&self, runs: usize) {
        let (h, b) = (&self.hark, &self.bare);
        println!(
            "cold start: {runs} runs each, interleaved (after {} warm-up runs each)\n  ms from spawn: median (min, p90)",
            cold::WARMUP_RUNS
        );
        println!(
            "  {:<26} {:>30} {:>30} {:>10}",
            "", self.label, "bare-ask-server", "hark/bare"
        );
        println!(
            "  {:<26} {:>30} {:>30} {:>9.2}x",
            "→ initialize response",
            timing(self.hark_init),
            timing(self.bare_init),
            self.ratio_init
        );
        println!(
            "  {:<26} {:>30} {:>30} {:>9.2}x",
            "→ tools/list response",
            timing(self.hark_list),
            timing(self.bare_list),
            self.ratio_list
        );
        println!(
            "  {:<26} {:>30} {:>30}",
            "peak RSS (max VmHWM)",
            megabytes(self.hark_rss),
            megabytes(self.bare_rss)
        );
        println!(
            "  {:<26} {:>30} {:>30}",
            "stdout only JSON-RPC",
            yes_no(h.stdout_clean),
            yes_no(b.stdout_clean)
        );
        println!(
            "  {:<26} {:>30} {:>30}",
            "tools listed",
            h.tools.join(", "),
            b.tools.join(", ")
        );
        for (label, bad) in [("hark", &h.bad_line), ("bare", &b.bad_line)] {
            if let Some(line) = bad {
                println!("  {label} wrote on stdout: {line:?}");
            }
        }
        println!();
    }

    fn to_json(&self, runs: usize) -> Value {
        let server = |r: &cold::Results, init: Summary, list: Summary, rss: Option<f64>| {
            json!({
                "initialize_ms": init.to_json(),
                "tools_list_ms": list.to_json(),
                "peak_rss_mb": rss.map(round3),
                "peak_rss_kib": r.peak_rss_kib,
                "stdout_clean": r.stdout_clean,
                "tools": r.tools,
            })
        };
        json!({
            "runs": runs,
            "warmup_runs": cold::WARMUP_RUNS,
            "server": self.label,
            "hark": server(&self.hark, self.hark_init, self.hark_list, self.hark_rss),
            "bare": server(&self.bare, self.bare_init, self.bare_list, self.bare_rss),
            "ratio_initialize_median": round3(self.ratio_init),
            "ratio_tools_list_median": round3(self.ratio_list),
        })
    }
}

fn print_round_trip(rt: &roundtrip::Results) {
    let s = rt.calls;
    println!(
        "round trip: {} sequential tools/call ask, hark mcp-operator-ask → hark serve --prompter script:…",
        s.n
    );
    println!(
        "  ms per call: p50 {:.3}  p99 {:.3}  max {:.3}  (min {:.3}, first call {:.3})",
        s.p50, s.p99, s.max, s.min, rt.first_ms
    );
    println!(
        "  answers exactly {}: {}/{}",
        roundtrip::EXPECTED_TEXT,
        rt.correct,
        s.n
    );
    if let Some(wrong) = &rt.first_wrong {
        println!("  first wrong response: {wrong}");
    }
    println!(
        "  stdout only JSON-RPC: {}   daemon exited cleanly on SIGTERM: {}",
        yes_no(rt.stdout_clean),
        yes_no(rt.daemon_clean_exit)
    );
    println!();
}

fn round_trip_json(rt: &roundtrip::Results) -> Value {
    json!({
        "calls": rt.calls.n,
        "ms": rt.calls.to_json(),
        "first_call_ms": round3(rt.first_ms),
        "correct": rt.correct,
        "stdout_clean": rt.stdout_clean,
        "daemon_clean_exit": rt.daemon_clean_exit,
    })
}

/// The targets, each met or missed.
#[derive(Debug)]
struct Targets {
    /// The worse of the two cold-start ratios.
    worst_ratio: f64,
    cold_ok: bool,
    rss_ok: bool,
    p99_ok: bool,
}

impl Targets {
    fn of(cold: &ColdStart, rt: &roundtrip::Results) -> Targets {
        let worst_ratio = cold.ratio_init.max(cold.ratio_list);
        Targets {
            worst_ratio,
            cold_ok: worst_ratio <= TARGET_COLD_RATIO,
            rss_ok: cold.hark_rss.is_some_and(|m| m <= TARGET_RSS_MB),
            p99_ok: rt.calls.p99 <= TARGET_P99_MS,
        }
    }

    fn print(&self, cold: &ColdStart, rt: &roundtrip::Results) {
        println!("targets");
        let target = |what: String, value: String, ok: bool| {
            println!("  {what:<48} {value:>10}  {}", pass(ok));
        };
        target(
            format!("cold start ≤ {TARGET_COLD_RATIO}x bare (worse of the two medians)"),
            format!("{:.2}x", self.worst_ratio),
            self.cold_ok,
        );
        target(
            format!("peak RSS of {} ≤ {TARGET_RSS_MB} MB", cold.label),
            megabytes(cold.hark_rss),
            self.rss_ok,
        );
        target(
            format!("round-trip p99 ≤ {TARGET_P99_MS} ms"),
            format!("{:.3} ms", rt.calls.p99),
            self.p99_ok,
        );
    }

    fn to_json(&self, cold: &ColdStart, rt: &roundtrip::Results) -> Value {
        json!({
            "cold_start_ratio_max": { "target": TARGET_COLD_RATIO, "value": round3(self.worst_ratio), "pass": self.cold_ok },
            "peak_rss_mb_max": { "target": TARGET_RSS_MB, "value": cold.hark_rss.map(round3), "pass": self.rss_ok },
            "round_trip_p99_ms_max": { "target": TARGET_P99_MS, "value": round3(rt.calls.p99), "pass": self.p99_ok },
        })
    }
}

/// `--inbox`: the inbox under load, alone; `Ok(false)` when something was
/// lost, wrong or answered twice.
fn run_inbox(options: &Options) -> Result<bool, Error> {
    let hark = options.bin_dir.join("hark");
    let sandbox = prepare(options, &[&hark], "-p hark")?;
    let results = inbox::measure(&sandbox, options.clients, options.items_per_client)?;
    Ok(inbox::report(&results))
}

/// `--confine`: confinement's cost, alone; `Ok(false)` when something
/// measured was wrong.
fn run_confine(options: &Options) -> Result<bool, Error> {
    let hark = options.bin_dir.join("hark");
    let fake = options.bin_dir.join("fake-claude");
    let sandbox = prepare(options, &[&hark, &fake], "-p hark -p fake-claude")?;
    let results = confine::measure(&sandbox, options.runs)?;
    Ok(confine::report(&results))
}

/// `--hooks`: the terminal hooks' cost with no daemon, alone; `Ok(false)`
/// when a hook adds more than its target.
fn run_hooks(options: &Options) -> Result<bool, Error> {
    let hark = options.bin_dir.join("hark");
    let sandbox = prepare(options, &[&hark], "-p hark")?;
    let results = hooks::measure(&sandbox, options.runs)?;
    Ok(hooks::report(&results))
}

/// `--hub`: the team's hub under load, alone; `Ok(false)` when an ask was
/// lost, answered wrong or twice, or something else did not hold.
fn run_hub(options: &Options) -> Result<bool, Error> {
    let hark = options.bin_dir.join("hark");
    // The bench lays out a sandbox per host itself; this one only checks
    // the binary is there.
    let _sandbox = prepare(options, &[&hark], "-p hark")?;
    let results = hub::measure(&options.bin_dir, options.hub_plan)?;
    Ok(hub::report(&results))
}

fn timing(s: Summary) -> String {
    format!("{:.2} (min {:.2}, p90 {:.2})", s.p50, s.min, s.p90)
}

fn megabytes(mb: Option<f64>) -> String {
    mb.map_or_else(|| "?".into(), |mb| format!("{mb:.1} MB"))
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}

fn pass(b: bool) -> &'static str {
    if b { "PASS" } else { "MISS" }
}
