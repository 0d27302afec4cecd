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

mod asker;
mod desktop;
mod idle;
mod latency;
mod memory;
mod procs;

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::desktop::Desktop;
use crate::procs::{TreeSample, mb};
use hark_bench::args::{Args, bin_dir};
use hark_bench::stats::{Summary, round3};
use hark_harness::Sandbox;
use hark_harness::desktop::installed;

/// Ask → `Notify` on the bus, median, ms.
const TARGET_NOTIFY_MS: f64 = 50.0;
/// Ask → the modal showing the options, median, ms.
const TARGET_MODAL_MS: f64 = 300.0;
/// Idle CPU of the whole app, % of one core.
const TARGET_IDLE_PERCENT: f64 = 1.0;
/// Resident memory of the whole app, MB (10^6 bytes).
const TARGET_RSS_MB: f64 = 250.0;
/// "Flat" as pending items grow: memory growth from 1 to many pending, %.
const TARGET_GROWTH_PERCENT: f64 = 10.0;

const USAGE: &str = "\
usage: hark-desktop-bench [--asks N] [--idle-secs S] [--pending N] [--bin-dir DIR]

  --asks N       sequential asks in the latency measurement (default 20)
  --idle-secs S  the idle window, in seconds (default 60)
  --pending N    items held pending in the memory measurement (default 50, at least 2)
  --bin-dir DIR  where `hark` and `hark-app` are (default: this executable's directory)

Run it on an X display: xvfb-run -a -s \"-screen 0 1280x800x24\" hark-desktop-bench";

#[derive(Debug)]
struct Options {
    asks: usize,
    idle_secs: u64,
    pending: usize,
    bin_dir: PathBuf,
}

fn parse_args() -> Result<Options, String> {
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
            _ => return Err(format!("unknown argument {:?}\n{USAGE}", flag.name)),
        }
    }
    if options.asks == 0 {
        return Err("--asks must be at least 1".into());
    }
    if options.idle_secs == 0 {
        return Err("--idle-secs must be at least 1".into());
    }
    if options.pending < 2 {
        return Err("--pending must be at least 2".into());
    }
    options.bin_dir = bin_dir(given_bin_dir)?;
    Ok(options)
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|options| run(&options));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("hark-desktop-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn progress(what: &str) {
    eprintln!("hark-desktop-bench: {what}");
}

/// Runs everything and prints the report; `Ok(false)` when something measured was wrong.
fn run(options: &Options) -> Result<bool, String> {
    let hark = options.bin_dir.join("hark");
    let app = options.bin_dir.join("hark-app");
    for binary in [&hark, &app] {
        if !binary.is_file() {
            return Err(format!(
                "{} is missing; build with `cargo build --release -p hark -p hark-app` or pass --bin-dir",
                binary.display()
            ));
        }
    }
    for tool in hark_harness::desktop::TOOLS
        .into_iter()
        .chain(desktop::TOOLS)
    {
        if !installed(tool) {
            return Err(format!(
                "{tool} is not installed: run ./scripts/setup (bench/desktop does)"
            ));
        }
    }
    let display = std::env::var("DISPLAY").unwrap_or_default();
    if display.is_empty() {
        return Err(
            "no X display: run it under xvfb-run -a -s \"-screen 0 1280x800x24\" (bench/desktop does)"
                .into(),
        );
    }
    let ticks_per_s = procs::clock_ticks()?;
    let sandbox = Sandbox::new("hark-desktop-bench-", &options.bin_dir)?;
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load_before = load_average();

    println!(
        "hark-desktop-bench: binaries in {}",
        options.bin_dir.display()
    );
    println!(
        "  display {display}, a private session bus with dunst; {cpus} CPUs, load average {load_before} at the start; CLK_TCK {ticks_per_s}"
    );
    println!();

    progress("starting the bus, dunst and hark-app");
    let mut desktop = Desktop::start(&sandbox, &app)?;
    let startup = desktop.startup;
    let tree_at_start = TreeSample::take(desktop.app_pid);
    println!(
        "startup: hark-app pid {}; spawn → serving {:.0} ms, → first tray.updated {:.0} ms",
        desktop.app_pid, startup.serving_ms, startup.tray_ms
    );
    println!("  its processes: {}", names(&tree_at_start));
    println!();

    progress(&format!("latency: {} asks", options.asks));
    let lat = latency::measure(&desktop, ticks_per_s, options.asks)?;
    let notify = Summary::of(&lat.column(|a| Some(a.notify_ms))).ok_or("no asks were made")?;
    let modal = Summary::of(&lat.column(|a| a.modal_ms));
    print_latency(&lat, options.asks);

    progress(&format!("idle: {} s", options.idle_secs));
    let idle = idle::measure(&desktop, ticks_per_s, options.idle_secs)?;
    print_idle(&idle);

    progress(&format!("memory: 1, then {} pending", options.pending));
    let mem = memory::measure(
        &desktop,
        ticks_per_s,
        options.pending,
        lat.modal_missing.is_none(),
    )?;
    print_memory(&mem);

    progress("stopping");
    let shutdown = desktop.stop();
    drop(desktop);
    let load_after = load_average();
    println!(
        "shutdown: hark-app on SIGTERM: {}; processes left behind: {}; load average {load_after} at the end",
        shutdown
            .app_status
            .as_deref()
            .unwrap_or("did not exit, killed"),
        if shutdown.leftovers.is_empty() {
            "none".to_owned()
        } else {
            shutdown.leftovers.join(", ")
        }
    );
    println!();

    // Targets.
    let resident = |s: &TreeSample| mb(s.resident_kib());
    let one_rss = resident(&mem.one.shown);
    let many_rss = resident(&mem.many.shown);
    let peak_rss = [
        &mem.one.shown,
        &mem.one.quiet,
        &mem.many.shown,
        &mem.many.quiet,
    ]
    .iter()
    .map(|s| resident(s))
    .fold(0.0, f64::max);
    let growth_mb = many_rss - one_rss;
    let growth_pct = growth_mb / one_rss * 100.0;
    let quiet_growth_mb = resident(&mem.many.quiet) - resident(&mem.one.quiet);
    let quiet_growth_pct = quiet_growth_mb / resident(&mem.one.quiet) * 100.0;
    let measure = if mem.one.shown.unique_kib.is_some() {
        "each page once"
    } else {
        "sum of RSS"
    };

    let notify_ok = notify.p50 <= TARGET_NOTIFY_MS;
    let modal_ok = modal.is_some_and(|m| m.p50 <= TARGET_MODAL_MS);
    let idle_ok = idle.percent <= TARGET_IDLE_PERCENT;
    let rss_ok = peak_rss <= TARGET_RSS_MB;
    let flat_ok = growth_pct <= TARGET_GROWTH_PERCENT;
    println!("targets");
    let target = |what: String, value: String, ok: bool| {
        println!("  {what:<58} {value:>12}  {}", pass(ok));
    };
    target(
        format!("ask → Notify on the bus, median ≤ {TARGET_NOTIFY_MS} ms"),
        format!("{:.1} ms", notify.p50),
        notify_ok,
    );
    target(
        format!("ask → modal showing the options, median ≤ {TARGET_MODAL_MS} ms"),
        modal.map_or("not logged".into(), |m| format!("{:.1} ms", m.p50)),
        modal_ok,
    );
    target(
        format!(
            "idle CPU over {:.0} s, whole app, ≤ {TARGET_IDLE_PERCENT} % of one core",
            idle.secs
        ),
        format!("{:.3} %", idle.percent),
        idle_ok,
    );
    target(
        format!(
            "memory of the whole app ({measure}; 1 and {} pending) ≤ {TARGET_RSS_MB} MB",
            options.pending
        ),
        format!("{peak_rss:.1} MB"),
        rss_ok,
    );
    target(
        format!(
            "memory flat from 1 to {} pending (growth ≤ {TARGET_GROWTH_PERCENT} %)",
            options.pending
        ),
        format!("{growth_pct:+.1} %"),
        flat_ok,
    );

    let mut wrong = Vec::new();
    if lat.skipped != lat.asks.len() {
        wrong.push(format!(
            "{} of {} skipped items did not settle as skipped",
            lat.asks.len() - lat.skipped,
            lat.asks.len()
        ));
    }
    if let Some(why) = &lat.modal_missing {
        wrong.push(why.clone());
    }
    if !shutdown.leftovers.is_empty() {
        wrong.push("processes outlived the app".into());
    }
    let sound = wrong.is_empty();
    for why in &wrong {
        println!("  WRONG: {why}");
    }
    if !sound {
        println!("  something measured was WRONG (see above): exit code 1");
    }

    let report = json!({
        "machine": {
            "cpus": cpus,
            "load_average_start": load_before,
            "load_average_end": load_after,
            "clk_tck": ticks_per_s,
        },
        "startup": {
            "serving_ms": round3(startup.serving_ms),
            "tray_ms": round3(startup.tray_ms),
            "processes": tree_at_start.procs.iter().map(|p| json!({"pid": p.pid, "name": p.name})).collect::<Vec<_>>(),
        },
        "latency": {
            "asks": lat.asks.len(),
            "skipped": lat.skipped,
            "ask_to_notify_ms": notify.to_json(),
            "ask_to_modal_shown_ms": modal.map(Summary::to_json),
            "ask_to_asked_log_ms": summary_json(&lat.column(|a| Some(a.asked_ms))),
            "ask_to_window_shown_ms": summary_json(&lat.column(|a| a.window_ms)),
            "ask_to_tray_updated_ms": summary_json(&lat.column(|a| Some(a.tray_ms))),
            "ask_to_notification_logged_ms": summary_json(&lat.column(|a| Some(a.notification_logged_ms))),
            "modal_since_asked_ms": summary_json(&lat.column(|a| a.since_asked_ms)),
            "skip_to_settled_ms": summary_json(&lat.column(|a| Some(a.settle_ms))),
            "first_ask": lat.asks.first().map(|a| json!({
                "notify_ms": round3(a.notify_ms),
                "modal_ms": a.modal_ms.map(round3),
            })),
            "modal_missing": lat.modal_missing,
        },
        "idle": {
            "secs": round3(idle.secs),
            "cpu_ms": round3(idle.cpu_ms),
            "cpu_percent_of_one_core": round3(idle.percent),
            "context_switches": idle.switches,
            "wakeups_per_s": round3(idle.switches as f64 / idle.secs),
            "processes": idle.procs.iter().map(|p| json!({
                "pid": p.pid,
                "name": p.name,
                "cpu_ms": p.cpu_ms.map(round3),
                "cpu_percent": p.percent.map(round3),
                "context_switches": p.switches,
                "threads": p.threads,
            })).collect::<Vec<_>>(),
            "busiest_threads": idle.busiest.iter().map(|t| json!({
                "process": t.process, "pid": t.pid, "tid": t.tid, "name": t.name, "context_switches": t.switches,
            })).collect::<Vec<_>>(),
            "log_lines": idle.log_lines.len(),
            "notifications_closed": idle.notifications_closed,
            "quiet_after_ms": idle.quiet_after.map(|d| d.as_millis() as u64),
        },
        "memory": {
            "one": point_json(&mem.one),
            "many": point_json(&mem.many),
            "after": point_json(&mem.after),
            "waited_for": mem.one_waited_for,
            "growth_mb": round3(growth_mb),
            "growth_percent": round3(growth_pct),
            "quiet_growth_mb": round3(quiet_growth_mb),
            "quiet_growth_percent": round3(quiet_growth_pct),
        },
        "shutdown": {
            "app_status": shutdown.app_status,
            "leftovers": shutdown.leftovers,
        },
        "targets": {
            "ask_to_notify_median_ms_max": { "target": TARGET_NOTIFY_MS, "value": round3(notify.p50), "pass": notify_ok },
            "ask_to_modal_median_ms_max": { "target": TARGET_MODAL_MS, "value": modal.map(|m| round3(m.p50)), "pass": modal_ok },
            "idle_cpu_percent_max": { "target": TARGET_IDLE_PERCENT, "value": round3(idle.percent), "pass": idle_ok },
            "memory_mb_max": { "measure": measure, "target": TARGET_RSS_MB, "value": round3(peak_rss), "pass": rss_ok },
            "memory_growth_percent_max": { "target": TARGET_GROWTH_PERCENT, "value": round3(growth_pct), "pass": flat_ok },
        },
        "sound": sound,
    });
    println!("{report}");
    Ok(sound)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn names(tree: &TreeSample) -> String {
    tree.procs
        .iter()
        .map(|p| format!("{} ({})", p.name, p.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

fn timing(s: Option<Summary>) -> String {
    s.map_or_else(
        || "—".into(),
        |s| format!("{:>8.1} ({:.1}, {:.1}, {:.1})", s.p50, s.min, s.p90, s.max),
    )
}

fn summary_json(ms: &[f64]) -> Value {
    Summary::of(ms).map_or(Value::Null, Summary::to_json)
}

fn print_latency(lat: &latency::Results, asks: usize) {
    println!(
        "latency: {asks} sequential asks, one question each; each skipped (`hark skip`), settled, and the app quiet again before the next"
    );
    println!("  ms from writing the ask frame: median (min, p90, max)");
    let row = |what: &str, ms: Vec<f64>| {
        println!("  {what:<48} {}", timing(Summary::of(&ms)));
    };
    row(
        "→ operator.question.asked (app log)",
        lat.column(|a| Some(a.asked_ms)),
    );
    row(
        "→ window shown, modal (app log)",
        lat.column(|a| a.window_ms),
    );
    row(
        "→ tray.updated, then inbox-changed (app log)",
        lat.column(|a| Some(a.tray_ms)),
    );
    row(
        "→ Notify on the bus (dbus-monitor time=)",
        lat.column(|a| Some(a.notify_ms)),
    );
    row(
        "→ notification shown (Notify returned; app log)",
        lat.column(|a| Some(a.notification_logged_ms)),
    );
    row(
        "→ modal.shown, options drawn (app log)",
        lat.column(|a| a.modal_ms),
    );
    row(
        "  modal.shown's own since_asked_ms",
        lat.column(|a| a.since_asked_ms),
    );
    row(
        "running `hark skip` → `settled` frame",
        lat.column(|a| Some(a.settle_ms)),
    );
    if let Some(first) = lat.asks.first() {
        println!(
            "  the first ask alone: → Notify {:.1} ms, → modal.shown {}",
            first.notify_ms,
            first
                .modal_ms
                .map_or("—".into(), |ms| format!("{ms:.1} ms"))
        );
    }
    println!("  settled as skipped: {}/{}", lat.skipped, lat.asks.len());
    if let Some(why) = &lat.modal_missing {
        println!("  modal.shown NOT MEASURED: {why}");
    }
    println!();
}

fn print_idle(idle: &idle::Results) {
    println!(
        "idle: {:.1} s with nothing pending, after the latency asks ({})",
        idle.secs,
        idle.quiet_after.map_or_else(
            || format!("the app never got under {} % of a core for a second first", idle::QUIET_PERCENT),
            |d| format!("started once the app used ≤ {} % of a core for a second, {:.0} s after the latency asks", idle::QUIET_PERCENT, d.as_secs_f64())
        )
    );
    println!(
        "  {:<24} {:>8} {:>10} {:>12} {:>12} {:>8}",
        "process", "pid", "CPU ms", "% of a core", "wake-ups/s", "threads"
    );
    for p in &idle.procs {
        println!(
            "  {:<24} {:>8} {:>10} {:>12} {:>12.2} {:>8}",
            p.name,
            p.pid,
            p.cpu_ms.map_or("exited".into(), |ms| format!("{ms:.0}")),
            p.percent.map_or("—".into(), |pc| format!("{pc:.3} %")),
            p.switches as f64 / idle.secs,
            p.threads
        );
    }
    println!(
        "  {:<24} {:>8} {:>10.0} {:>12} {:>12.2}",
        "total",
        "",
        idle.cpu_ms,
        format!("{:.3} %", idle.percent),
        idle.switches as f64 / idle.secs
    );
    println!(
        "  (wake-ups/s: context switches, voluntary and not, per second, summed over the threads)"
    );
    println!("  busiest threads (context switches over the window):");
    for t in idle.busiest.iter().filter(|t| t.switches > 0) {
        println!(
            "    {:<22} {:>8} {:<18} {:>6}  ({:.2}/s)",
            format!("{} {}", t.process, t.pid),
            t.tid,
            t.name,
            t.switches,
            t.switches as f64 / idle.secs
        );
    }
    println!(
        "  app log lines during the window: {}; notifications dunst closed during it: {}",
        idle.log_lines.len(),
        idle.notifications_closed
    );
    for line in idle.log_lines.iter().take(5) {
        println!("    {line}");
    }
    println!();
}

fn print_memory(mem: &memory::Results) {
    let points = [&mem.one, &mem.many, &mem.after];
    println!(
        "memory: resident set (VmRSS) of the app's process tree, MB; as soon as shown / once quiet"
    );
    println!(
        "  (1 pending: after {}; {} pending: after the tray counted them all and every notification was up; then all cancelled)",
        mem.one_waited_for, mem.many.pending
    );
    println!(
        "  (RSS counts a library page once per process mapping it; PSS splits it among them, here and elsewhere on the machine, so another WebKit app lowers it; \"each page once\" counts every physical page the app's processes hold once: what the app costs the machine)"
    );
    let header: Vec<String> = points
        .iter()
        .map(|p| format!("{} pending", p.pending))
        .collect();
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "",
        header[0],
        header[1],
        format!("{} (after)", header[2])
    );
    let mut pids: Vec<(u32, String)> = Vec::new();
    for p in points {
        for s in [&p.shown, &p.quiet] {
            for proc_ in &s.procs {
                if !pids.iter().any(|(pid, _)| *pid == proc_.pid) {
                    pids.push((proc_.pid, proc_.name.clone()));
                }
            }
        }
    }
    let cell = |a: Option<f64>, b: Option<f64>| {
        let f = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.1}"));
        format!("{} / {}", f(a), f(b))
    };
    for (pid, name) in &pids {
        let rss = |s: &TreeSample| s.get(*pid).map(|p| mb(p.rss_kib));
        println!(
            "  {:<30} {:>22} {:>22} {:>22}",
            format!("{name} ({pid})"),
            cell(rss(&mem.one.shown), rss(&mem.one.quiet)),
            cell(rss(&mem.many.shown), rss(&mem.many.quiet)),
            cell(rss(&mem.after.shown), rss(&mem.after.quiet)),
        );
    }
    let total = |f: &dyn Fn(&TreeSample) -> Option<f64>| {
        points
            .iter()
            .map(|p| cell(f(&p.shown), f(&p.quiet)))
            .collect::<Vec<_>>()
    };
    let rss = total(&|s| Some(mb(s.rss_kib())));
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "total RSS", rss[0], rss[1], rss[2]
    );
    let pss = total(&|s| s.pss_kib().map(mb));
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "total PSS (shares split)", pss[0], pss[1], pss[2]
    );
    let unique = total(&|s| s.unique_kib.map(mb));
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "whole app, each page once", unique[0], unique[1], unique[2]
    );
    let threads: Vec<String> = points
        .iter()
        .map(|p| format!("{} / {}", p.shown.threads(), p.quiet.threads()))
        .collect();
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "threads", threads[0], threads[1], threads[2]
    );
    let app_threads: Vec<String> = points
        .iter()
        .map(|p| {
            let n = |s: &TreeSample| s.procs.first().map_or(0, |a| a.threads.len());
            format!("{} / {}", n(&p.shown), n(&p.quiet))
        })
        .collect();
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "  of which hark-app's", app_threads[0], app_threads[1], app_threads[2]
    );
    for p in points {
        if let Some(app) = p.shown.procs.first() {
            println!(
                "  hark-app's threads by name at {} pending: {}",
                p.pending,
                thread_names(app)
            );
        }
    }
    let quiet = |p: &memory::Point| {
        p.quiet_after
            .map_or("never".into(), |d| format!("{:.0} s", d.as_secs_f64()))
    };
    println!(
        "  {:<30} {:>22} {:>22} {:>22}",
        "quiet after",
        quiet(&mem.one),
        quiet(&mem.many),
        quiet(&mem.after)
    );
    let resident = |s: &TreeSample| mb(s.resident_kib());
    let one = resident(&mem.one.shown);
    let many = resident(&mem.many.shown);
    let (one_q, many_q) = (resident(&mem.one.quiet), resident(&mem.many.quiet));
    println!(
        "  growth 1 → {} pending: {:+.1} MB ({:+.1} %) as shown, {:+.1} MB ({:+.1} %) once quiet",
        mem.many.pending,
        many - one,
        (many - one) / one * 100.0,
        many_q - one_q,
        (many_q - one_q) / one_q * 100.0
    );
    println!();
}

/// `52 tokio-rt-worker, 50 zruntime, …`: a process's threads counted by name.
fn thread_names(p: &procs::ProcSample) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for t in p.threads.values() {
        match counts.iter_mut().find(|(name, _)| *name == t.name) {
            Some((_, n)) => *n += 1,
            None => counts.push((t.name.clone(), 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
        .iter()
        .map(|(name, n)| format!("{n} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn point_json(p: &memory::Point) -> Value {
    let sample = |s: &TreeSample| {
        json!({
            "rss_mb": round3(mb(s.rss_kib())),
            "pss_mb": s.pss_kib().map(|k| round3(mb(k))),
            "unique_mb": s.unique_kib.map(|k| round3(mb(k))),
            "threads": s.threads(),
            "processes": s.procs.iter().map(|p| json!({
                "pid": p.pid,
                "name": p.name,
                "rss_mb": round3(mb(p.rss_kib)),
                "pss_mb": p.pss_kib.map(|k| round3(mb(k))),
                "threads": p.threads.len(),
            })).collect::<Vec<_>>(),
        })
    };
    json!({
        "pending": p.pending,
        "shown": sample(&p.shown),
        "quiet": sample(&p.quiet),
        "quiet_after_ms": p.quiet_after.map(|d| d.as_millis() as u64),
    })
}

fn pass(b: bool) -> &'static str {
    if b { "PASS" } else { "MISS" }
}
