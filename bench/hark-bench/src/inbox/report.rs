//! The report: a table, and one final JSON line.

use serde_json::{Value, json};

use super::ANSWER_POOL;
use super::results::Results;
use crate::stats::{Summary, round3};
use crate::{megabytes, yes_no};
use hark_harness::Report;

/// What both the table and the JSON line show, worked out from the results.
#[derive(Debug)]
struct Figures {
    secs: f64,
    /// Correct items per second of wall time.
    rate: f64,
    listing: Option<Summary>,
    answering: Option<Summary>,
    /// The daemon's peak RSS, in MB.
    mb: Option<f64>,
}

impl Figures {
    fn of(r: &Results) -> Figures {
        let secs = r.wall.as_secs_f64();
        Figures {
            secs,
            rate: if secs > 0.0 {
                r.correct as f64 / secs
            } else {
                0.0
            },
            listing: Summary::of_durations(&r.operator.listings),
            answering: Summary::of_durations(&r.operator.answer_runs),
            mb: r.daemon_peak_rss_kib.map(|k| k as f64 * 1024.0 / 1e6),
        }
    }
}

/// Prints the table and the final JSON line; returns [`Results::sound`].
pub fn report(r: &Results) -> bool {
    let figures = Figures::of(r);
    print_clients(r, &figures);
    print_operator(r, &figures);
    print_calls_and_store(r);
    print_daemon(r, &figures);
    for example in r.examples.iter().chain(&r.operator.examples) {
        println!("  ! {example}");
    }
    for killed in &r.operator.killed_at_abort {
        println!("  ! killed at the abort: {killed}");
    }
    let sound = r.sound();
    if let Some(why) = &r.aborted {
        println!("  {why}");
    }
    if !sound {
        println!(
            "  something was LOST, WRONG, ANSWERED TWICE or could not be checked (see above): exit code 1"
        );
    }
    println!("{}", to_json(r, &figures, sound));
    sound
}

fn row(what: &str, value: String) {
    println!("  {what:<40} {value}");
}

/// What was asked, how fast the clients came up and got their results.
fn print_clients(r: &Results, f: &Figures) {
    let (total, secs, rate) = (r.total(), f.secs, f.rate);
    println!(
        "inbox: {total} items asked by {} concurrent hark mcp-operator-ask ({} each) of hark serve --prompter script:{{}},\n  all answered with `hark answer` ({ANSWER_POOL} at a time) from `hark inbox --json`",
        r.clients, r.per_client
    );
    row(
        "clients spawned and initialized",
        format!("{:.0} ms", r.clients_ready_ms),
    );
    row(
        "wall time, first ask → last result",
        format!("{secs:.3} s  ({rate:.1} items/s)"),
    );
    if let Some(l) = r.latency {
        row(
            "ask → result per call, ms",
            format!(
                "p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}",
                l.p50, l.p90, l.p99, l.max
            ),
        );
    }
}

/// The operator's `hark inbox --json` and `hark answer` runs.
fn print_operator(r: &Results, f: &Figures) {
    let (o, listing, answering) = (&r.operator, f.listing, f.answering);
    row(
        "hark inbox --json runs",
        format!(
            "{}{}  (most pending in one listing: {}, {} KB; failed: {})",
            o.listings.len(),
            listing.map_or(String::new(), |l| format!(
                ", ms each p50 {:.1} max {:.1}",
                l.p50, l.max
            )),
            o.most_pending,
            o.largest_listing_bytes / 1000,
            o.listing_failures
        ),
    );
    row(
        "hark answer runs",
        format!(
            "{}{}",
            o.answer_runs.len(),
            answering.map_or(String::new(), |a| format!(
                ", ms each p50 {:.1} p99 {:.1} max {:.1}",
                a.p50, a.p99, a.max
            ))
        ),
    );
    row(
        "  exit 0 / already settled / other",
        format!("{} / {} / {}", o.answered_ok, o.already_settled, o.failed),
    );
    row(
        "  double answers (exit 0 twice, one id)",
        o.double_answers.to_string(),
    );
    row(
        "  pending again after answered",
        o.pending_after_answer.to_string(),
    );
}

/// The calls' results, and the store's view at the end.
fn print_calls_and_store(r: &Results) {
    let (total, s) = (r.total(), &r.store);
    row(
        "calls: exactly one correct result",
        format!(
            "{}/{total}  (lost {}, duplicated {}, wrong {}, stray {}, cut off by the abort {})",
            r.correct, r.lost, r.duplicated, r.wrong, r.stray, r.cut_off
        ),
    );
    match &s.error {
        Some(e) => row("hark inbox --all --json", Report(e).to_string()),
        None => {
            let mut outcomes: Vec<_> = s.outcomes.iter().collect();
            outcomes.sort();
            let outcomes: Vec<String> = outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            row(
                "hark inbox --all --json",
                format!(
                    "{} items ({} KB), {} unique ids, {} answered by cli, {} right answers, {} questions exactly once  ({})",
                    s.items,
                    s.bytes / 1000,
                    s.unique_ids,
                    s.answered_by_cli,
                    s.right_answers,
                    s.questions_once,
                    outcomes.join(", ")
                ),
            );
        }
    }
}

/// The daemon's footprint and log, and how everything exited.
fn print_daemon(r: &Results, f: &Figures) {
    let mb = f.mb;
    row("daemon peak RSS (VmHWM)", megabytes(mb));
    row(
        "daemon open fds, most sampled",
        format!(
            "{}  (soft limit {})",
            r.daemon_peak_fds.map_or("?".into(), |n| n.to_string()),
            r.daemon_fd_limit.as_deref().unwrap_or("?")
        ),
    );
    row(
        "daemon stderr",
        format!(
            "{} KB, {} warnings/errors{}",
            r.daemon_log.bytes / 1000,
            r.daemon_log.warnings,
            r.daemon_log
                .first_warning
                .as_ref()
                .map_or(String::new(), |w| format!(", first: {w}"))
        ),
    );
    row(
        "clients: stdout only JSON-RPC / exit 0",
        format!(
            "{} / {}",
            yes_no(r.clients_stdout_clean),
            yes_no(r.clients_clean_exit)
        ),
    );
    row(
        "daemon exited cleanly on SIGTERM",
        yes_no(r.daemon_clean_exit).into(),
    );
}

/// The final JSON line.
fn to_json(r: &Results, f: &Figures, sound: bool) -> Value {
    let (total, o, s) = (r.total(), &r.operator, &r.store);
    let (secs, rate, listing, answering, mb) = (f.secs, f.rate, f.listing, f.answering, f.mb);
    json!({
        "inbox": {
            "clients": r.clients,
            "items_per_client": r.per_client,
            "items": total,
            "answer_pool": ANSWER_POOL,
            "clients_ready_ms": round3(r.clients_ready_ms),
            "wall_s": round3(secs),
            "items_per_s": round3(rate),
            "ask_to_result_ms": r.latency.map(Summary::to_json),
            "listings": o.listings.len(),
            "listing_ms": listing.map(Summary::to_json),
            "listing_failures": o.listing_failures,
            "most_pending_listed": o.most_pending,
            "largest_listing_bytes": o.largest_listing_bytes,
            "answer_runs": o.answer_runs.len(),
            "answer_ms": answering.map(Summary::to_json),
            "answered_ok": o.answered_ok,
            "already_settled": o.already_settled,
            "answer_failures": o.failed,
            "double_answers": o.double_answers,
            "pending_after_answer": o.pending_after_answer,
            "unparsable": o.unparsable,
            "correct": r.correct,
            "lost": r.lost,
            "duplicated": r.duplicated,
            "wrong": r.wrong,
            "stray": r.stray,
            "cut_off": r.cut_off,
            "killed_at_abort": o.killed_at_abort,
            "daemon_log": {
                "bytes": r.daemon_log.bytes,
                "warnings": r.daemon_log.warnings,
                "first_warning": r.daemon_log.first_warning,
            },
            "store": {
                "items": s.items,
                "bytes": s.bytes,
                "unique_ids": s.unique_ids,
                "answered_by_cli": s.answered_by_cli,
                "right_answers": s.right_answers,
                "questions_once": s.questions_once,
                "outcomes": s.outcomes,
                "error": s.error.as_ref().map(|e| Report(e).to_string()),
            },
            "daemon_peak_rss_mb": mb.map(round3),
            "daemon_peak_rss_kib": r.daemon_peak_rss_kib,
            "daemon_peak_fds": r.daemon_peak_fds,
            "daemon_fd_soft_limit": r.daemon_fd_limit,
            "clients_stdout_clean": r.clients_stdout_clean,
            "clients_clean_exit": r.clients_clean_exit,
            "daemon_clean_exit": r.daemon_clean_exit,
            "aborted": r.aborted.as_ref().map(ToString::to_string),
        },
        "sound": sound,
    })
}
