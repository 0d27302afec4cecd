//! Trace events (SPEC §9), greppable by name: the event name is the message,
//! and every event carries `question_id`, `session_id`, `headers`,
//! `duration_ms` and `outcome`.
//!
//! If an agent seems stuck, a question never appeared, or an agent got blank
//! answers, these three events are the first thing to grep.

use std::time::Duration;

use tracing_subscriber::filter::LevelFilter;

use crate::model::approval::{Approval, Scope};
use crate::model::item::{Item, Outcome};

pub const ASKED: &str = "operator.question.asked";
pub const ANSWERED: &str = "operator.question.answered";
pub const UNANSWERED: &str = "operator.question.unanswered";
/// Nobody answered in time and the agent is paused, not guessing.
pub const PARKED: &str = "operator.question.parked";
/// The write-mode gate's audit trail: one per verdict on a proposed write.
pub const WRITE_MODE: &str = "machine.write_mode_granted";

fn headers(item: &Item) -> String {
    item.request.headers().join(", ")
}

/// A question reached the operator surface.
pub fn asked(item: &Item) {
    tracing::info!(
        question_id = %item.id,
        session_id = %item.session_id,
        headers = %headers(item),
        duration_ms = 0u64,
        outcome = "pending",
        timeout_ms = u64::try_from(item.timeout.as_millis()).unwrap_or(u64::MAX),
        "{ASKED}"
    );
}

/// An item settled: answered (a verdict on an approval counts), or
/// unanswered with the reason as `outcome`; `surface` is where the reply
/// came from (none for a timeout or an asker gone).
pub fn settled(
    item: &Item,
    outcome: &Outcome,
    duration: Duration,
    surface: Option<&crate::model::item::Surface>,
) {
    let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let operator_replied = matches!(
        outcome,
        Outcome::Answered(_) | Outcome::Approved { .. } | Outcome::Denied
    );
    let name = if operator_replied {
        ANSWERED
    } else {
        UNANSWERED
    };
    tracing::info!(
        question_id = %item.id,
        session_id = %item.session_id,
        headers = %headers(item),
        duration_ms,
        outcome = outcome.name(),
        surface = surface.map_or("", |s| s.name()),
        "{name}"
    );
}

/// A verdict on a proposed write: the operator's (`by` = `operator`, or the
/// outcome that stood in for one: timed out, cancelled), an earlier grant's
/// (`grant`), or the gate's own when nobody can approve (`headless`).
/// `scope` is empty for a denial.
pub fn write_mode(
    approval: &Approval,
    run_id: &str,
    session_id: &str,
    verdict: Option<Scope>,
    by: &str,
) {
    tracing::info!(
        run_id,
        session_id,
        tool = %approval.tool,
        target = %approval.target,
        scope = verdict.map_or("", Scope::name),
        verdict = if verdict.is_some() { "allow" } else { "deny" },
        by,
        "{WRITE_MODE}"
    );
}

/// How logs are written (always to stderr: stdout may belong to a protocol).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    /// One JSON object per line, fields flattened: `{"message":"operator.question.asked",…}`.
    Json,
}

impl LogFormat {
    /// The format `HARK_LOG_FORMAT` names (`json`), for the programs that
    /// take it from their environment (the desktop app and its window).
    pub fn from_env() -> LogFormat {
        match std::env::var(crate::env::LOG_FORMAT).as_deref() {
            Ok("json") => LogFormat::Json,
            _ => LogFormat::Text,
        }
    }
}

/// Installs the stderr logger. `HARK_LOG` (`error`, `warn`, `info`, `debug`,
/// `trace`, `off`) picks the level; `default_level` otherwise.
pub fn init_logging(format: LogFormat, default_level: LevelFilter) {
    let level = std::env::var(crate::env::LOG)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_level);
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}

/// An item parked: nobody answered within its bounded wait, and its agent
/// is paused until the operator does.
pub fn parked(item: &Item) {
    tracing::info!(
        question_id = %item.id,
        session_id = %item.session_id,
        headers = %headers(item),
        duration_ms = u64::try_from(item.timeout.as_millis()).unwrap_or(u64::MAX),
        outcome = "parked",
        "{PARKED}"
    );
}
