//! What the run found: the clients' tally, the operator's and the store's
//! side, the daemon's log.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hark_harness::{Lines, Report};

use super::clients::ClientReport;
use super::store::Unchecked;
use super::{Abort, LOG_READ, expected_text, push_example, question};
use crate::stats::Summary;

/// What the run found.
#[derive(Debug, Default)]
pub struct Results {
    pub clients: usize,
    pub per_client: usize,
    /// Spawn of the first client → every client initialized.
    pub clients_ready_ms: f64,
    /// First ask written → last first-result read.
    pub wall: Duration,
    /// Per call: its client's first ask written → its result read.
    pub latency: Option<Summary>,
    /// Calls with exactly one result, not an error, exactly the expected text.
    pub correct: usize,
    /// Calls that got no result.
    pub lost: usize,
    /// Calls that got more than one result.
    pub duplicated: usize,
    /// Calls whose (first) result was an error or the wrong text.
    pub wrong: usize,
    /// Calls whose first result came only after the run was aborted (the
    /// errors the daemon's stop gives every waiting call).
    pub cut_off: usize,
    /// Results for ids nobody asked.
    pub stray: usize,
    pub examples: Vec<String>,
    pub operator: OperatorStats,
    pub store: StoreCheck,
    pub daemon_peak_rss_kib: Option<u64>,
    /// The most file descriptors the daemon had open when sampled, and its
    /// soft limit.
    pub daemon_peak_fds: Option<usize>,
    pub daemon_fd_limit: Option<String>,
    pub daemon_log: LogSummary,
    pub clients_stdout_clean: bool,
    pub clients_clean_exit: bool,
    pub daemon_clean_exit: bool,
    /// Why the run stopped before every call had its result, and when.
    pub aborted: Option<Abort>,
    pub(super) aborted_at: Option<Instant>,
}

/// The daemon's stderr, summarized.
#[derive(Debug, Default)]
pub struct LogSummary {
    pub bytes: u64,
    /// `WARN` and `ERROR` lines (in the first [`LOG_READ`] bytes).
    pub warnings: usize,
    pub first_warning: Option<String>,
}

impl LogSummary {
    pub(super) fn of(log: &Lines) -> LogSummary {
        let mut summary = LogSummary {
            bytes: log.bytes(),
            ..LogSummary::default()
        };
        let mut read = 0;
        let lines = log.since(0);
        let first = lines.iter().take_while(|l| {
            let before = read;
            read += l.text.len() as u64 + 1;
            before < LOG_READ
        });
        for line in first.map(|l| l.text.as_str()) {
            if line.contains(" WARN ") || line.contains(" ERROR ") {
                summary.warnings += 1;
                if summary.first_warning.is_none() {
                    summary.first_warning = Some(line.chars().take(200).collect());
                }
            }
        }
        summary
    }
}

impl Results {
    pub fn total(&self) -> usize {
        self.clients * self.per_client
    }

    /// Nothing lost, wrong or answered twice, and everything exited cleanly.
    pub fn sound(&self) -> bool {
        let total = self.total();
        let o = &self.operator;
        let s = &self.store;
        self.aborted.is_none()
            && self.correct == total
            && self.lost == 0
            && self.duplicated == 0
            && self.wrong == 0
            && self.stray == 0
            && o.double_answers == 0
            && o.failed == 0
            && o.unparsable == 0
            && o.answered_ok == total
            && s.error.is_none()
            && s.items == total
            && s.unique_ids == total
            && s.answered_by_cli == total
            && s.right_answers == total
            && s.questions_once == total
            && self.clients_stdout_clean
            && self.clients_clean_exit
            && self.daemon_clean_exit
    }
}

/// What the operator side did.
#[derive(Debug, Default)]
pub struct OperatorStats {
    /// `hark inbox --json` runs, and how long each took.
    pub listings: Vec<Duration>,
    /// Listing runs that failed (exit code or output).
    pub listing_failures: usize,
    /// The most pending items one listing returned, and the largest
    /// listing in bytes (one bridge frame, capped at 1 MiB).
    pub most_pending: usize,
    pub largest_listing_bytes: usize,
    /// `hark answer` runs, and how long each took.
    pub answer_runs: Vec<Duration>,
    /// Runs that exited 0.
    pub answered_ok: usize,
    /// Items that more than one run answered with exit 0.
    pub double_answers: usize,
    /// Runs refused with "already settled".
    pub already_settled: usize,
    /// Items still listed as pending by a listing started after a `hark
    /// answer` for them had succeeded.
    pub pending_after_answer: usize,
    /// Any other refusal or failure.
    pub failed: usize,
    /// Pending items whose question was not one of ours.
    pub unparsable: usize,
    /// Runs still going when the run was aborted, killed.
    pub killed_at_abort: Vec<String>,
    pub examples: Vec<String>,
}

/// What `hark inbox --all --json` said at the end.
#[derive(Debug, Default)]
pub struct StoreCheck {
    pub items: usize,
    /// The listing's size: it travels as one bridge frame, capped at 1 MiB.
    pub bytes: usize,
    pub unique_ids: usize,
    /// Outcome `answered` and `replied_by` `cli`.
    pub answered_by_cli: usize,
    /// Answered with exactly the label the operator picked.
    pub right_answers: usize,
    /// Distinct questions of ours that appear exactly once.
    pub questions_once: usize,
    /// Outcome name → count.
    pub outcomes: HashMap<String, usize>,
    pub error: Option<Unchecked>,
}

/// Counts the clients' results into `results`.
pub(super) fn tally(results: &mut Results, reports: &[ClientReport]) {
    let mut latencies = Vec::new();
    let mut first_ask: Option<Instant> = None;
    let mut last_result: Option<Instant> = None;
    results.clients_stdout_clean = reports.len() == results.clients;
    results.clients_clean_exit = reports.len() == results.clients;
    for report in reports {
        results.clients_stdout_clean &= report.stdout_clean;
        results.clients_clean_exit &= report.clean_exit;
        if let Some(e) = &report.error {
            push_example(&mut results.examples, Report(e).to_string());
        }
        if let Some(sent) = report.first_sent {
            first_ask = Some(first_ask.map_or(sent, |t| t.min(sent)));
        }
        results.stray += report.stray;
        for (item, responses) in report.responses.iter().enumerate() {
            let Some((at, first)) = responses.first() else {
                results.lost += 1;
                push_example(
                    &mut results.examples,
                    format!("lost: {:?} got no result", question(report.client, item)),
                );
                continue;
            };
            last_result = Some(last_result.map_or(*at, |t| t.max(*at)));
            if let Some(sent) = report.first_sent {
                latencies.push(at.saturating_duration_since(sent));
            }
            if results.aborted_at.is_some_and(|t| *at >= t) {
                results.cut_off += 1;
                continue;
            }
            let right = crate::rpc::is_expected(first, &expected_text(report.client, item));
            if responses.len() > 1 {
                results.duplicated += 1;
                push_example(
                    &mut results.examples,
                    format!(
                        "duplicated: {:?} got {} results",
                        question(report.client, item),
                        responses.len()
                    ),
                );
            } else if right {
                results.correct += 1;
            }
            if !right {
                results.wrong += 1;
                push_example(
                    &mut results.examples,
                    format!("wrong: {:?} got {first}", question(report.client, item)),
                );
            }
        }
    }
    if let (Some(first), Some(last)) = (first_ask, last_result) {
        results.wall = last.saturating_duration_since(first);
    }
    results.latency = Summary::of_durations(&latencies);
}
