//! `hark-bench`: measures `hark mcp-operator-ask` against its promises.
//!
//! 1. Cold start: spawn → `initialize` response and spawn → `tools/list`
//!    response, against `bare-ask-server` (the least an rmcp stdio server
//!    with one tool can be); peak RSS; nothing but JSON-RPC on stdout.
//! 2. Round trip: sequential `tools/call ask` through `hark serve
//!    --prompter script:…`, which answers at once.
//!
//! With `--inbox` it runs only the inbox under load instead: many clients
//! ask at once, and every question is answered with `hark answer` (see
//! [`inbox`]); the exit code is 1 when a question was lost, answered wrong
//! or answered twice.
//!
//! It prints a table, PASS/MISS against the targets, and one final JSON line.
//! The exit code is 1 when something was wrong (a failed run, a wrong answer,
//! non-protocol output on stdout), not when a target is missed.

mod cold;
mod inbox;
mod roundtrip;
mod rpc;

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use hark_bench::args::{Args, bin_dir};
use hark_bench::stats;
use hark_bench::stats::{Summary, round3};
use hark_harness::Sandbox;

/// Cold start: hark's medians may be at most this many times bare's.
const TARGET_COLD_RATIO: f64 = 1.5;
/// Peak RSS of `hark mcp-operator-ask`, in MB (10^6 bytes).
const TARGET_RSS_MB: f64 = 10.0;
/// Round trip p99, in ms.
const TARGET_P99_MS: f64 = 5.0;
const MIN_RUNS: usize = 20;

const USAGE: &str = "\
usage: hark-bench [--runs N] [--calls N] [--bin-dir DIR]
       hark-bench --inbox [--clients N] [--items-per-client N] [--bin-dir DIR]

  --runs N       cold-start runs per server, interleaved (default 30, at least 20)
  --calls N      sequential ask calls in the round trip (default 500)
  --bin-dir DIR  where `hark` and `bare-ask-server` are (default: this executable's directory)

  --inbox               only the inbox under load: N clients (`hark mcp-operator-ask`)
                        each ask M questions at once, all answered with `hark answer`
  --clients N           concurrent clients (default 100)
  --items-per-client N  questions each client asks at once (default 10)";

#[derive(Debug)]
struct Options {
    runs: usize,
    calls: usize,
    bin_dir: PathBuf,
    inbox: bool,
    clients: usize,
    items_per_client: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut runs = 30;
    let mut calls = 500;
    let mut given_bin_dir = None;
    let mut inbox = false;
    let mut clients = 100;
    let mut items_per_client = 10;
    let mut args = Args::from_env();
    while let Some(flag) = args.next_flag() {
        match flag.name.as_str() {
            "--runs" => runs = args.number(&flag)?,
            "--calls" => calls = args.number(&flag)?,
            "--bin-dir" => given_bin_dir = Some(PathBuf::from(args.value(&flag)?)),
            "--inbox" if flag.inline.is_none() => inbox = true,
            "--clients" => clients = args.number(&flag)?,
            "--items-per-client" => items_per_client = args.number(&flag)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {:?}\n{USAGE}", flag.name)),
        }
    }
    if runs < MIN_RUNS {
        return Err(format!("--runs must be at least {MIN_RUNS}, got {runs}"));
    }
    if calls == 0 {
        return Err("--calls must be at least 1".into());
    }
    if clients == 0 || items_per_client == 0 {
        return Err("--clients and --items-per-client must be at least 1".into());
    }
    let bin_dir = bin_dir(given_bin_dir)?;
    Ok(Options {
        runs,
        calls,
        bin_dir,
        inbox,
        clients,
        items_per_client,
    })
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|options| {
        if options.inbox {
            run_inbox(&options)
        } else {
            run(&options)
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("hark-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs everything and prints the report; `Ok(false)` when something measured was wrong.
/// Checks the binaries are built, and lays out the sandbox in a temp dir
/// (removed when it drops).
fn prepare(
    options: &Options,
    binaries: &[&std::path::Path],
    build: &str,
) -> Result<Sandbox, String> {
    if let Some(missing) = binaries.iter().find(|b| !b.is_file()) {
        return Err(format!(
            "{} is missing; build with `cargo build --release {build}` or pass --bin-dir",
            missing.display()
        ));
    }
    let sandbox = Sandbox::new("hark-bench-", &options.bin_dir)?;
    println!("hark-bench: binaries in {}", options.bin_dir.display());
    println!();
    Ok(sandbox)
}

fn run(options: &Options) -> Result<bool, String> {
    let hark = options.bin_dir.join("hark");
    let bare = options.bin_dir.join("bare-ask-server");
    let sandbox = prepare(options, &[&hark, &bare], "--workspace")?;

    // (a) Cold start. Both run in the sandbox: hark finds no config, and
    // nothing listens on its socket.
    let hark_subject = cold::Subject {
        label: "hark mcp-operator-ask",
        program: hark.clone(),
        args: vec!["mcp-operator-ask".into()],
        stderr_log: sandbox.path("cold-hark.stderr"),
    };
    let bare_subject = cold::Subject {
        label: "bare-ask-server",
        program: bare,
        args: Vec::new(),
        stderr_log: sandbox.path("cold-bare.stderr"),
    };
    let (h, b) = cold::measure(&sandbox, &hark_subject, &bare_subject, options.runs)?;
    let (h_init, h_list, b_init, b_list) = match (
        h.initialize(),
        h.tools_list(),
        b.initialize(),
        b.tools_list(),
    ) {
        (Some(a), Some(b), Some(c), Some(d)) => (a, b, c, d),
        _ => return Err("the cold start measured nothing".into()),
    };
    let ratio_init = h_init.p50 / b_init.p50;
    let ratio_list = h_list.p50 / b_list.p50;
    let mb = |kib: Option<u64>| kib.map(|k| k as f64 * 1024.0 / 1e6);
    let (h_rss, b_rss) = (mb(h.peak_rss_kib), mb(b.peak_rss_kib));

    println!(
        "cold start: {} runs each, interleaved (after {} warm-up runs each)\n  ms from spawn: median (min, p90)",
        options.runs,
        cold::WARMUP_RUNS
    );
    println!(
        "  {:<26} {:>30} {:>30} {:>10}",
        "", "hark mcp-operator-ask", "bare-ask-server", "hark/bare"
    );
    println!(
        "  {:<26} {:>30} {:>30} {:>9.2}x",
        "→ initialize response",
        timing(h_init),
        timing(b_init),
        ratio_init
    );
    println!(
        "  {:<26} {:>30} {:>30} {:>9.2}x",
        "→ tools/list response",
        timing(h_list),
        timing(b_list),
        ratio_list
    );
    println!(
        "  {:<26} {:>30} {:>30}",
        "peak RSS (max VmHWM)",
        megabytes(h_rss),
        megabytes(b_rss)
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

    // (b) Round trip.
    let rt = roundtrip::measure(&sandbox, options.calls)?;
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

    // Targets.
    let worst_ratio = ratio_init.max(ratio_list);
    let cold_ok = worst_ratio <= TARGET_COLD_RATIO;
    let rss_ok = h_rss.is_some_and(|m| m <= TARGET_RSS_MB);
    let p99_ok = s.p99 <= TARGET_P99_MS;
    println!("targets");
    let target = |what: String, value: String, ok: bool| {
        println!("  {what:<48} {value:>10}  {}", pass(ok));
    };
    target(
        format!("cold start ≤ {TARGET_COLD_RATIO}x bare (worse of the two medians)"),
        format!("{worst_ratio:.2}x"),
        cold_ok,
    );
    target(
        format!("peak RSS of hark mcp-operator-ask ≤ {TARGET_RSS_MB} MB"),
        megabytes(h_rss),
        rss_ok,
    );
    target(
        format!("round-trip p99 ≤ {TARGET_P99_MS} ms"),
        format!("{:.3} ms", s.p99),
        p99_ok,
    );

    let sound = h.stdout_clean
        && b.stdout_clean
        && rt.stdout_clean
        && rt.correct == s.n
        && rt.daemon_clean_exit;
    if !sound {
        println!("  something measured was WRONG (see above): exit code 1");
    }

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
    let report = json!({
        "cold_start": {
            "runs": options.runs,
            "warmup_runs": cold::WARMUP_RUNS,
            "hark": server(&h, h_init, h_list, h_rss),
            "bare": server(&b, b_init, b_list, b_rss),
            "ratio_initialize_median": round3(ratio_init),
            "ratio_tools_list_median": round3(ratio_list),
        },
        "round_trip": {
            "calls": s.n,
            "ms": s.to_json(),
            "first_call_ms": round3(rt.first_ms),
            "correct": rt.correct,
            "stdout_clean": rt.stdout_clean,
            "daemon_clean_exit": rt.daemon_clean_exit,
        },
        "targets": {
            "cold_start_ratio_max": { "target": TARGET_COLD_RATIO, "value": round3(worst_ratio), "pass": cold_ok },
            "peak_rss_mb_max": { "target": TARGET_RSS_MB, "value": h_rss.map(round3), "pass": rss_ok },
            "round_trip_p99_ms_max": { "target": TARGET_P99_MS, "value": round3(s.p99), "pass": p99_ok },
        },
        "sound": sound,
    });
    println!("{report}");
    Ok(sound)
}

/// `--inbox`: the inbox under load, alone; `Ok(false)` when something was
/// lost, wrong or answered twice.
fn run_inbox(options: &Options) -> Result<bool, String> {
    let hark = options.bin_dir.join("hark");
    let sandbox = prepare(options, &[&hark], "-p hark")?;
    let results = inbox::measure(&sandbox, options.clients, options.items_per_client)?;
    Ok(inbox::report(&results))
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
