//! `hark runs` and `hark sessions`: the store's listings, as a table or JSON.

use std::time::SystemTime;

use serde::Serialize;

use hark_core::bridge::views::{RunView, SessionView};
use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::store::unix_ms;
use hark_core::text::{clip, visible};

use crate::cli::ListArgs;
use crate::commands::query::{print_json, query, refused};
use crate::exit::ExitStatus;

/// Asks for a listing and prints it: JSON, or a line per row (`empty`
/// when there are none). `rows` takes the listing out of the answer.
async fn list<T: Serialize>(
    frame: ClientFrame,
    json: bool,
    rows: impl FnOnce(ServerFrame) -> Result<Vec<T>, ServerFrame>,
    empty: &str,
    show: impl Fn(&T, u64),
) -> ExitStatus {
    let rows = match query(&frame).await.map(rows) {
        Ok(Ok(rows)) => rows,
        Ok(Err(other)) => return refused(other),
        Err(code) => return code,
    };
    if json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        println!("{empty}");
    }
    let now_ms = unix_ms(SystemTime::now());
    for row in &rows {
        show(row, now_ms);
    }
    ExitStatus::Success
}

/// `hark runs`: the dispatched runs, newest first, with their state and
/// the items they asked.
pub async fn runs(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let rows = |frame| match frame {
        ServerFrame::Runs { runs } => Ok(runs),
        other => Err(other),
    };
    let empty = "No runs yet: `hark run -- PROMPT` dispatches one.";
    list(ClientFrame::ListRuns { limit }, json, rows, empty, show_run).await
}

/// One run as two lines: its state, session, items, time, exit and cost,
/// then the start of its result.
fn show_run(run: &RunView, now_ms: u64) {
    let took = run
        .finished_ms
        .unwrap_or(now_ms)
        .saturating_sub(run.created_ms)
        / 1000;
    let exit = run
        .exit_code
        .map(|c| format!(" exit {c}"))
        .unwrap_or_default();
    let status = format!("{:?}", run.status).to_uppercase();
    let cost = run
        .cost_usd
        .map(|c| format!(" ${c:.4}"))
        .unwrap_or_default();
    println!(
        "{status:<9} {}  session {} — {} item(s), {} pending — {took} s{exit}{cost} — {}",
        run.id.short(),
        visible(run.session_id.as_str()),
        run.items,
        run.pending,
        visible(&clip(&run.command, 100)),
    );
    if let Some(result) = run.result.as_deref().and_then(|r| r.lines().next()) {
        println!("          → {}", visible(&clip(result, 120)));
    }
}

/// `hark sessions`: the sessions that asked, those waiting on you first.
pub async fn sessions(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let rows = |frame| match frame {
        ServerFrame::Sessions { sessions } => Ok(sessions),
        other => Err(other),
    };
    let empty = "No session has asked yet.";
    list(
        ClientFrame::ListSessions { limit },
        json,
        rows,
        empty,
        show_session,
    )
    .await
}

/// One session as a line: waiting, active or ended, its items, when it
/// last asked and how that ended, and its agent.
fn show_session(session: &SessionView, now_ms: u64) {
    let status = match (session.pending, session.alive) {
        (1.., _) => "WAITING",
        (0, Some(true)) => "ACTIVE",
        (0, Some(false)) => "ENDED",
        (0, None) => "",
    };
    let ago = now_ms.saturating_sub(session.last_asked_ms) / 1000;
    let last = session
        .last_outcome
        .as_deref()
        .map(|o| format!(", last {}", o.replace('_', " ")))
        .unwrap_or_default();
    let agent = [
        session.asker.command.as_deref(),
        session.asker.cwd.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" in ");
    println!(
        "{status:<9} {} — {} item(s), {} pending — last asked {ago} s ago{last} — {}",
        visible(session.session_id.as_str()),
        session.items,
        session.pending,
        visible(&clip(&agent, 100)),
    );
}
