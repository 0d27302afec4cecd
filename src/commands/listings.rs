//! `hark runs` and `hark sessions`: the store's listings, as a table or JSON.

use std::time::SystemTime;

use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::store::unix_ms;
use hark_core::text::clip;

use crate::cli::ListArgs;
use crate::commands::query::{print_json, query, refused};
use crate::exit::ExitStatus;

/// `hark runs`: the dispatched runs, newest first, with their state and
/// the items they asked.
pub async fn runs(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let runs = match query(&ClientFrame::ListRuns { limit }).await {
        Ok(ServerFrame::Runs { runs }) => runs,
        Ok(other) => return refused(other),
        Err(code) => return code,
    };
    if json {
        return print_json(&runs);
    }
    if runs.is_empty() {
        println!("No runs yet: `hark run -- PROMPT` dispatches one.");
    }
    let now_ms = unix_ms(SystemTime::now());
    for run in &runs {
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
            run.session_id,
            run.items,
            run.pending,
            clip(&run.command, 100),
        );
        if let Some(result) = run.result.as_deref().and_then(|r| r.lines().next()) {
            println!("          → {}", clip(result, 120));
        }
    }
    ExitStatus::Success
}

/// `hark sessions`: the sessions that asked, those waiting on you first.
pub async fn sessions(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let sessions = match query(&ClientFrame::ListSessions { limit }).await {
        Ok(ServerFrame::Sessions { sessions }) => sessions,
        Ok(other) => return refused(other),
        Err(code) => return code,
    };
    if json {
        return print_json(&sessions);
    }
    if sessions.is_empty() {
        println!("No session has asked yet.");
    }
    let now_ms = unix_ms(SystemTime::now());
    for session in &sessions {
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
            session.session_id,
            session.items,
            session.pending,
            clip(&agent, 100),
        );
    }
    ExitStatus::Success
}
