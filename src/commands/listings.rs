//! `hark runs` and `hark sessions`: the store's listings, as a table or
//! JSON, read page by page (each page fits a frame, however long the
//! prompts in it), and the page follower `hark inbox` shares.

use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use hark_core::bridge::client;
use hark_core::bridge::views::{RunView, SessionView};
use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::store::unix_ms;
use hark_core::text::{clip, visible};

use crate::cli::ListArgs;
use crate::commands::query::{print_json, refused, socket_path, unreachable};
use crate::exit::ExitStatus;

/// One page of a listing: its rows, and where the next starts.
pub type Page<T> = (Vec<T>, Option<u32>);

/// Follows a listing page by page, from the start until the server says
/// no more follow or `limit` rows are in. `frame` asks for the page from
/// an offset (with how many rows are still wanted); `page` takes it out of
/// the answer.
pub async fn pages<T>(
    socket: &Path,
    limit: Option<u32>,
    frame: impl Fn(u32, Option<u32>) -> ClientFrame,
    page: impl Fn(ServerFrame) -> Result<Page<T>, ServerFrame>,
) -> Result<Vec<T>, ExitStatus> {
    let mut rows = Vec::new();
    let mut offset = 0;
    loop {
        let left = limit.map(|l| l.saturating_sub(rows.len() as u32));
        if left == Some(0) {
            return Ok(rows);
        }
        let answer = match client::request(socket, &frame(offset, left)).await {
            Ok(answer) => page(answer),
            Err(e) => return Err(unreachable(&e)),
        };
        let (mut got, next) = answer.map_err(refused)?;
        if let Some(left) = left {
            got.truncate(left as usize);
        }
        rows.extend(got);
        match next {
            // A server that does not move on would be asked forever.
            Some(next) if next > offset => offset = next,
            _ => return Ok(rows),
        }
    }
}

/// Lists every page and prints the rows: JSON, or a line per row (`empty`
/// when there are none).
async fn list<T: Serialize>(
    limit: Option<u32>,
    json: bool,
    frame: impl Fn(u32, Option<u32>) -> ClientFrame,
    page: impl Fn(ServerFrame) -> Result<Page<T>, ServerFrame>,
    empty: &str,
    show: impl Fn(&T, u64),
) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let rows = match pages(&socket, Some(limit.unwrap_or(DEFAULT_LIMIT)), frame, page).await {
        Ok(rows) => rows,
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

/// How many runs or sessions are listed when `--limit` is not given.
const DEFAULT_LIMIT: u32 = 100;

/// `hark runs`: the dispatched runs, newest first, with their state and
/// the items they asked.
pub async fn runs(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let frame = |offset, limit| ClientFrame::ListRuns {
        limit,
        offset: Some(offset),
    };
    let page = |frame| match frame {
        ServerFrame::Runs { runs, next } => Ok((runs, next)),
        other => Err(other),
    };
    let empty = "No runs yet: `hark run -- PROMPT` dispatches one.";
    list(limit, json, frame, page, empty, show_run).await
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
    if let Some(confinement) = &run.confinement {
        println!("          {}", visible(&confinement.label()));
    }
    if let Some(result) = run.result.as_deref().and_then(|r| r.lines().next()) {
        println!("          → {}", visible(&clip(result, 120)));
    }
}

/// `hark sessions`: the sessions that asked, those waiting on you first.
pub async fn sessions(ListArgs { limit, json }: ListArgs) -> ExitStatus {
    let frame = |offset, limit| ClientFrame::ListSessions {
        limit,
        offset: Some(offset),
    };
    let page = |frame| match frame {
        ServerFrame::Sessions { sessions, next } => Ok((sessions, next)),
        other => Err(other),
    };
    let empty = "No session has asked yet.";
    list(limit, json, frame, page, empty, show_session).await
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
