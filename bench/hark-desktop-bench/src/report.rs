//! What the benchmark prints: a table per measurement as it is done, and
//! the sections of the final JSON line.

use serde_json::{Value, json};

use crate::desktop::{Desktop, Shutdown};
use crate::procs::{self, TreeSample, mb};
use crate::targets::Targets;
use crate::{Measured, idle, latency, memory};
use hark_bench::stats::{Summary, round3};

/// How the app came up, and its processes.
pub fn print_startup(desktop: &Desktop, tree: &TreeSample) {
    println!(
        "startup: hark-app pid {}; spawn → serving {:.0} ms, → first tray.updated {:.0} ms",
        desktop.app_pid, desktop.startup.serving_ms, desktop.startup.tray_ms
    );
    println!("  its processes: {}", names(tree));
    println!();
}

/// How the app went down.
pub fn print_shutdown(shutdown: &Shutdown, load_after: &str) {
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

pub fn print_latency(lat: &latency::Results, asks: usize) {
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

pub fn print_idle(idle: &idle::Results) {
    let after = if idle.after_release {
        "the latency asks and their window's release"
    } else {
        "the latency asks"
    };
    println!(
        "idle: {:.1} s with nothing pending, after {after} ({})",
        idle.secs,
        idle.quiet_after.map_or_else(
            || format!(
                "the app never got under {} % of a core for a second first",
                idle::QUIET_PERCENT
            ),
            |d| format!(
                "started once the app used ≤ {} % of a core for a second, {:.0} s after",
                idle::QUIET_PERCENT,
                d.as_secs_f64()
            )
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

/// The memory table: each process's RSS at each point, as shown and once
/// quiet, the tree's totals, its threads, and the growth.
pub fn print_memory(mem: &memory::Results) {
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
    print_memory_per_process(&points);
    print_memory_totals(&points);
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

/// One row per process that was in the tree at any point.
fn print_memory_per_process(points: &[&memory::Point; 3]) {
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
    for (pid, name) in &pids {
        let rss = |s: &TreeSample| s.get(*pid).map(|p| mb(p.rss_kib));
        let cells: Vec<String> = points
            .iter()
            .map(|p| cell(rss(&p.shown), rss(&p.quiet)))
            .collect();
        println!(
            "  {:<30} {:>22} {:>22} {:>22}",
            format!("{name} ({pid})"),
            cells[0],
            cells[1],
            cells[2],
        );
    }
}

/// The whole tree's RSS, PSS, pages counted once, and threads at each point.
fn print_memory_totals(points: &[&memory::Point; 3]) {
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
}

/// `shown / quiet`, in MB with one decimal, `—` for what was not there.
fn cell(a: Option<f64>, b: Option<f64>) -> String {
    let f = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.1}"));
    format!("{} / {}", f(a), f(b))
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

/// The final JSON line's `startup`.
pub fn startup_json(m: &Measured) -> Value {
    json!({
        "serving_ms": round3(m.startup.serving_ms),
        "tray_ms": round3(m.startup.tray_ms),
        "processes": m.tree_at_start.procs.iter().map(|p| json!({"pid": p.pid, "name": p.name})).collect::<Vec<_>>(),
    })
}

/// The final JSON line's `latency`.
pub fn latency_json(m: &Measured) -> Value {
    let lat = &m.lat;
    json!({
        "asks": lat.asks.len(),
        "skipped": lat.skipped,
        "ask_to_notify_ms": m.notify.to_json(),
        "ask_to_modal_shown_ms": m.modal.map(Summary::to_json),
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
        "modal_missing": lat.modal_missing.as_ref().map(ToString::to_string),
    })
}

/// The final JSON line's `idle`.
pub fn idle_json(idle: &idle::Results) -> Value {
    json!({
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
        "after_release": idle.after_release,
    })
}

/// The final JSON line's `memory`.
pub fn memory_json(mem: &memory::Results, targets: &Targets) -> Value {
    json!({
        "one": point_json(&mem.one),
        "many": point_json(&mem.many),
        "after": point_json(&mem.after),
        "waited_for": mem.one_waited_for,
        "growth_mb": round3(targets.growth_mb),
        "growth_percent": round3(targets.growth_pct),
        "quiet_growth_mb": round3(targets.quiet_growth_mb),
        "quiet_growth_percent": round3(targets.quiet_growth_pct),
    })
}
