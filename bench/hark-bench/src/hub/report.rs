//! The report: a table, PASS/MISS against the targets, one final JSON line.

use serde_json::{Value, json};

use super::check::StoreCheck;
use super::round::Round;
use super::team::{Memory, OPERATORS};
use super::{Plan, Results};
use crate::stats::{Summary, round3};
use crate::{pass, yes_no};

/// What the hub may add to each median, in ms.
pub const TARGET_ADDED_MS: f64 = 20.0;

/// The two latencies, with and without the hub.
#[derive(Debug)]
struct Figures {
    /// Ask → the other daemons' notification: the measured rounds, then
    /// the same again.
    notice: Added,
    notice_again: Added,
    hub_own_notice: Option<Summary>,
    /// `hark answer` started → the agent's result.
    answer: Added,
    relay: Option<Summary>,
}

/// One latency of a round, with and without the hub, and what the hub
/// added to its median.
#[derive(Debug)]
struct Added {
    base: Option<Summary>,
    hub: Option<Summary>,
    added: Option<f64>,
}

impl Added {
    fn of(base: &[f64], hub: &[f64]) -> Added {
        let (base, hub) = (Summary::of(base), Summary::of(hub));
        let added = base.zip(hub).map(|(base, hub)| hub.p50 - base.p50);
        Added { base, hub, added }
    }
}

impl Figures {
    fn of(r: &Results) -> Figures {
        Figures {
            notice: Added::of(&r.baseline.notice, &r.hub.notice),
            notice_again: Added::of(&r.baseline_again.notice, &r.hub_again.notice),
            hub_own_notice: Summary::of(&r.hub.own_notice),
            answer: Added::of(&r.baseline.answer_to_result, &r.hub.answer_to_result),
            relay: Summary::of(&r.hub.relay),
        }
    }
}

fn timing(s: Option<Summary>) -> String {
    s.map_or_else(
        || "?".into(),
        |s| format!("{:.2} (p90 {:.2}, max {:.2})", s.p50, s.p90, s.max),
    )
}

fn mb(kib: Option<u64>) -> String {
    kib.map_or_else(|| "?".into(), |k| format!("{:.1}", k as f64 * 1024.0 / 1e6))
}

/// A round's asks all answered exactly once, the answer given.
fn round_sound(r: &Round) -> bool {
    r.correct == r.asks
        && r.lost == 0
        && r.duplicated == 0
        && r.wrong == 0
        && r.answer_failures == 0
        && r.id_mismatches == 0
        && r.agents_clean_exit
}

/// Every round, in the order they ran.
fn rounds(r: &Results) -> [&Round; 4] {
    [&r.baseline, &r.baseline_again, &r.hub, &r.hub_again]
}

/// Everything that must hold, whatever the timings.
fn sound(r: &Results) -> bool {
    let stores = |s: &[StoreCheck]| s.iter().all(|c| c.sound(r.plan.asks));
    let i = &r.idle;
    rounds(r).into_iter().all(round_sound)
        && stores(&r.baseline_store)
        && stores(&r.hub_store)
        && r.hub_store.len() == 2 * OPERATORS
        && i.alive_after == i.real
        && i.clean_exit == i.real
        && i.emulated_saw_all + i.watch_refused >= i.emulated
        && i.watch_refused == 0
        && r.daemons_clean_exit
}

/// Prints the table and the final JSON line; whether everything was sound.
pub fn report(r: &Results) -> bool {
    let f = Figures::of(r);
    let (plan, i) = (r.plan, &r.idle);
    println!(
        "hub: {} concurrent asks over {OPERATORS} operator daemons (hark serve, [hub]) on one nats-server, {} idle agents connected\n  ({} real `hark mcp-operator-ask --hub`, {} emulated: an async-nats client each, holding the same watch{});\n  each ask answered with `hark answer` on another daemon than the asker's, one at a time;\n  baseline: the same asks on one daemon with no hub, answered there (measured: the first round of freshly started daemons; then the same again)",
        plan.asks,
        plan.idle,
        i.real,
        i.emulated,
        i.memory_short_mb.map_or(String::new(), |m| format!(
            "; real ones stopped at {m} MB available"
        )),
    );
    println!("  ms: median (p90, max)");
    println!(
        "  {:<44} {:>32} {:>32} {:>10}",
        "", "without hub (1 daemon)", "with hub (3 daemons)", "added p50"
    );
    let row = |what: &str, a: &Added| {
        println!(
            "  {what:<44} {:>32} {:>32} {:>10}",
            timing(a.base),
            timing(a.hub),
            a.added.map_or("?".into(), |a| format!("{a:+.2}"))
        );
    };
    row("ask → the other daemons' notification", &f.notice);
    println!(
        "  {:<44} {:>32} {:>32}",
        "  (→ the asker's own daemon)",
        "",
        timing(f.hub_own_notice)
    );
    row("  (the same again, on the same daemons)", &f.notice_again);
    row("hark answer started → the agent's result", &f.answer);
    println!(
        "  {:<44} {:>32} {:>32}",
        "  (answerer's answered line → asker's)",
        "",
        timing(f.relay)
    );
    print_memory(r);
    print_checks(r);
    let sound = sound(r);
    println!("targets");
    let ok = |a: Option<f64>| a.is_some_and(|a| a <= TARGET_ADDED_MS);
    for (what, value) in [
        ("ask → notification", f.notice.added),
        ("answer → agent", f.answer.added),
    ] {
        println!(
            "  {:<48} {:>10}  {}",
            format!("the hub adds ≤ {TARGET_ADDED_MS} ms to {what}, median"),
            value.map_or("?".into(), |v| format!("{v:.2} ms")),
            pass(ok(value))
        );
    }
    if !sound {
        println!(
            "  something was LOST, WRONG, ANSWERED TWICE or did not hold (see above): exit code 1"
        );
    }
    println!("{}", to_json(r, &f, sound));
    sound
}

fn print_memory(r: &Results) {
    let i = &r.idle;
    let summary = |s: Option<Summary>| {
        s.map_or("?".into(), |s| {
            format!("median {:.1}, min {:.1}, max {:.1}", s.p50, s.min, s.max)
        })
    };
    println!("memory, MB (VmRSS; peak is VmHWM at the end)");
    println!(
        "  {:<44} idle {}; after the round {}",
        "a real idle agent",
        summary(i.rss_idle_mb),
        summary(i.rss_after_mb)
    );
    println!(
        "  {:<44} {:>8} {:>8} {:>8} {:>8}",
        "", "before", "idle", "asks", "peak"
    );
    let row = |what: String, pick: &dyn Fn(&Memory) -> Option<u64>| {
        println!(
            "  {what:<44} {:>8} {:>8} {:>8} {:>8}",
            mb(pick(&r.before)),
            mb(pick(&r.with_idle)),
            mb(pick(&r.with_asks)),
            mb(pick(&r.peak))
        );
    };
    row("nats-server".into(), &|m| m.server_kib);
    for d in 0..OPERATORS {
        row(format!("hark serve op-{}", d + 1), &|m| {
            m.daemons_kib.get(d).copied().flatten()
        });
    }
}

fn print_checks(r: &Results) {
    let i = &r.idle;
    println!("exactly once");
    for round in rounds(r) {
        println!(
            "  {:<44} {}/{} one right result (lost {}, twice {}, wrong {}; hark answer failed {}; other ids {}); agents exit 0, JSON-RPC only: {}",
            format!("{} round", round.label),
            round.correct,
            round.asks,
            round.lost,
            round.duplicated,
            round.wrong,
            round.answer_failures,
            round.id_mismatches,
            yes_no(round.agents_clean_exit)
        );
    }
    for s in r.baseline_store.iter().chain(&r.hub_store) {
        let what = format!("hark inbox --all --json on {} ({})", s.host, s.round);
        match &s.error {
            Some(e) => println!("  {what:<44} {e}"),
            None => println!(
                "  {what:<44} {} items, {} once, {} answered as picked, {} replied from the right surface",
                s.items, s.once, s.right, s.replied_right
            ),
        }
    }
    println!(
        "  {:<44} {} of {} real still running, {} exited cleanly; {} of {} emulated read every decision (fewest read: {}); all connected in {:.0} ms",
        "idle agents",
        i.alive_after,
        i.real,
        i.clean_exit,
        i.emulated_saw_all,
        i.emulated,
        i.emulated_least_seen.map_or("-".into(), |n| n.to_string()),
        i.connect_ms
    );
    println!(
        "  {:<44} {}{}",
        "idle agents refused a watch of the decisions",
        i.watch_refused,
        i.first_refusal
            .as_ref()
            .map_or(String::new(), |w| format!(", first: {w}"))
    );
    println!(
        "  {:<44} {}",
        "daemons exited cleanly on SIGTERM",
        yes_no(r.daemons_clean_exit)
    );
    for e in rounds(r).into_iter().flat_map(|r| &r.examples) {
        println!("  ! {e}");
    }
}

fn round_json(r: &Round) -> Value {
    let s = |v: &[f64]| Summary::of(v).map(Summary::to_json);
    json!({
        "hosts": r.hosts,
        "asks": r.asks,
        "notice_ms": s(&r.notice),
        "own_notice_ms": s(&r.own_notice),
        "answer_to_result_ms": s(&r.answer_to_result),
        "relay_ms": s(&r.relay),
        "answer_run_ms": s(&r.answer_runs),
        "correct": r.correct,
        "lost": r.lost,
        "duplicated": r.duplicated,
        "wrong": r.wrong,
        "answer_failures": r.answer_failures,
        "id_mismatches": r.id_mismatches,
        "agents_clean_exit": r.agents_clean_exit,
        "examples": r.examples,
    })
}

fn memory_json(m: &Memory) -> Value {
    json!({ "nats_server_kib": m.server_kib, "daemons_kib": m.daemons_kib })
}

fn to_json(r: &Results, f: &Figures, sound: bool) -> Value {
    let Plan { idle, asks, .. } = r.plan;
    let i = &r.idle;
    let stores: Vec<Value> = r
        .baseline_store
        .iter()
        .chain(&r.hub_store)
        .map(|s| {
            json!({"host": s.host, "round": s.round, "items": s.items, "once": s.once, "right": s.right,
                   "replied_right": s.replied_right, "error": s.error})
        })
        .collect();
    let target = |v: Option<f64>| {
        json!({"target": TARGET_ADDED_MS, "value": v.map(round3),
               "pass": v.is_some_and(|v| v <= TARGET_ADDED_MS)})
    };
    json!({
        "hub": {
            "idle": idle,
            "asks": asks,
            "operators": OPERATORS,
            "baseline": round_json(&r.baseline),
            "with_hub": round_json(&r.hub),
            "added_notice_ms_p50": f.notice.added.map(round3),
            "again": {
                "baseline": round_json(&r.baseline_again),
                "with_hub": round_json(&r.hub_again),
                "added_notice_ms_p50": f.notice_again.added.map(round3),
            },
            "added_answer_ms_p50": f.answer.added.map(round3),
            "idle_agents": {
                "real": i.real,
                "emulated": i.emulated,
                "memory_short_mb": i.memory_short_mb,
                "connect_ms": round3(i.connect_ms),
                "rss_idle_mb": i.rss_idle_mb.map(Summary::to_json),
                "rss_after_mb": i.rss_after_mb.map(Summary::to_json),
                "alive_after": i.alive_after,
                "clean_exit": i.clean_exit,
                "emulated_saw_all": i.emulated_saw_all,
                "emulated_least_seen": i.emulated_least_seen,
                "watch_refused": i.watch_refused,
                "first_refusal": i.first_refusal,
            },
            "memory": {
                "before": memory_json(&r.before),
                "with_idle": memory_json(&r.with_idle),
                "with_asks": memory_json(&r.with_asks),
                "peak": memory_json(&r.peak),
            },
            "stores": stores,
            "daemons_clean_exit": r.daemons_clean_exit,
        },
        "targets": {
            "added_notice_ms_p50_max": target(f.notice.added),
            "added_answer_ms_p50_max": target(f.answer.added),
        },
        "sound": sound,
    })
}
