//! The terminal surface of the inbox: `hark inbox`, `hark answer`,
//! `hark skip`. They talk to the running app or `hark serve` over its socket.
//! Human-readable by default, `--json` for scripts (one JSON value per line).

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::json;

use crate::approval::Scope;
use crate::client::{self, AskError, Feed};
use crate::item::{ItemId, Outcome};
use crate::resolve::{Picks, picks_from_words};
use crate::socket;
use crate::store::{Filter, Record, unix_ms};
use crate::validate::describe;
use crate::wire::{ClientFrame, ErrorCode, FeedEvent, ServerFrame, WireReply};

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_REFUSED: i32 = 2;
pub const EXIT_NO_OPERATOR: i32 = 3;

#[derive(Debug, Clone, Default)]
pub struct InboxOptions {
    pub json: bool,
    /// Settled items too, not only pending ones.
    pub all: bool,
    /// Keep following: print each item added or settled.
    pub watch: bool,
    /// Delete the settled history.
    pub clear_settled: bool,
    pub limit: Option<u32>,
}

/// How the operator answers in `hark answer`.
#[derive(Debug, Clone, Default)]
pub struct AnswerOptions {
    /// The item's id, or a unique prefix of a pending item's id.
    pub id: String,
    pub picks: Vec<String>,
    pub text: Option<String>,
    /// Confirm the pre-picked defaults.
    pub defaults: bool,
    pub json: bool,
}

pub(crate) fn socket_path() -> Result<PathBuf, i32> {
    socket::app_socket_path().map_err(|e| {
        eprintln!("hark: {e}");
        EXIT_FAILED
    })
}

pub(crate) fn unreachable(e: &AskError) -> i32 {
    eprintln!("hark: {e}");
    if matches!(e, AskError::Unreachable { .. }) {
        eprintln!("hint: start `hark app` (desktop) or `hark serve --prompter terminal`");
        EXIT_NO_OPERATOR
    } else {
        EXIT_FAILED
    }
}

/// `hark inbox`.
pub async fn inbox(options: InboxOptions) -> i32 {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if options.clear_settled {
        return match client::request(&socket, &ClientFrame::ClearSettled).await {
            Ok(ServerFrame::Cleared { removed }) => {
                if options.json {
                    println!("{}", json!({"removed": removed}));
                } else {
                    println!("cleared {removed} settled item(s) from the history");
                }
                EXIT_OK
            }
            Ok(other) => refused(other),
            Err(e) => unreachable(&e),
        };
    }
    if options.watch {
        return watch(&socket, options.json).await;
    }
    let items = match list_all(&socket, !options.all, options.limit).await {
        Ok(items) => items,
        Err(code) => return code,
    };
    if options.json {
        println!("{}", serde_json::to_string(&items).unwrap_or_default());
    } else if items.is_empty() {
        println!(
            "{}",
            if options.all {
                "the inbox is empty"
            } else {
                "nothing is waiting for you"
            }
        );
    } else {
        let now = unix_ms(SystemTime::now());
        for item in &items {
            println!("{}", line(item, now));
        }
    }
    EXIT_OK
}

/// Items listed per request, so that each answer stays well under a frame.
const PAGE: u32 = 200;

/// Lists items page by page (pending only when `pending_only`), up to `limit`.
async fn list_all(
    socket: &std::path::Path,
    pending_only: bool,
    limit: Option<u32>,
) -> Result<Vec<Record>, i32> {
    let mut items = Vec::new();
    loop {
        let want = limit.map_or(PAGE, |l| l.saturating_sub(items.len() as u32).min(PAGE));
        if want == 0 {
            return Ok(items);
        }
        let filter = Filter {
            pending: pending_only.then_some(true),
            limit: Some(want),
            offset: Some(items.len() as u32),
            ..Filter::default()
        };
        let page = match client::request(socket, &ClientFrame::List { filter }).await {
            Ok(ServerFrame::Items { items }) => items,
            Ok(other) => return Err(refused(other)),
            Err(e) => return Err(unreachable(&e)),
        };
        let done = (page.len() as u32) < want;
        items.extend(page);
        if done {
            return Ok(items);
        }
    }
}

async fn watch(socket: &std::path::Path, json: bool) -> i32 {
    let mut feed = match Feed::open(socket, &ClientFrame::Subscribe).await {
        Ok(feed) => feed,
        Err(e) => return unreachable(&e),
    };
    if !json {
        eprintln!("hark: following the inbox (Ctrl-C to stop)");
    }
    loop {
        let frame = tokio::select! {
            frame = feed.next() => frame,
            _ = tokio::signal::ctrl_c() => return EXIT_OK,
        };
        match frame {
            Ok(ServerFrame::Event { event, item }) => {
                if json {
                    println!("{}", json!({"event": event, "item": item}));
                } else {
                    let verb = match event {
                        FeedEvent::Added => "new",
                        FeedEvent::Settled => "settled",
                    };
                    println!("{verb:>7}  {}", line(&item, unix_ms(SystemTime::now())));
                }
            }
            Ok(other) => return refused(other),
            Err(e) => {
                eprintln!("hark: {e}");
                return EXIT_FAILED;
            }
        }
    }
}

/// One item as a line: status, short id, header and question, who asked, and
/// either the time left or what happened.
fn line(r: &Record, now_ms: u64) -> String {
    let short = &r.id.to_string()[..8];
    let questions: Vec<String> = r
        .request
        .questions
        .iter()
        .map(|q| format!("[{}] {}", q.header, q.question))
        .collect();
    let mut who = format!("session {}", r.session_id);
    if let Some(command) = &r.asker.command {
        who.push_str(&format!(" · {command}"));
    }
    if let Some(cwd) = &r.asker.cwd {
        who.push_str(&format!(" in {cwd}"));
    }
    let status = match &r.outcome {
        None => {
            let left = r.deadline_ms.saturating_sub(now_ms) / 1000;
            format!(
                "PENDING   {short}  {} — {who} — {left} s left",
                questions.join(" · ")
            )
        }
        Some(outcome) => {
            let waited = r.settled_ms.unwrap_or(now_ms).saturating_sub(r.created_ms) / 1000;
            let what = match outcome {
                Outcome::Answered(resolution) => {
                    serde_json::to_string(&resolution.answers).unwrap_or_default()
                }
                Outcome::Cancelled { reason } => reason.clone(),
                _ => String::new(),
            };
            let by = r
                .replied_by
                .as_ref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            format!(
                "{:<9} {short}  {} — {who} — after {waited} s{by} {what}",
                outcome.name().to_uppercase(),
                questions.join(" · ")
            )
        }
    };
    status.trim_end().to_owned()
}

/// `hark runs`: the dispatched runs, newest first, with their state and
/// the items they asked.
pub async fn runs(limit: Option<u32>, json: bool) -> i32 {
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
            &run.id[..run.id.len().min(8)],
            run.session_id,
            run.items,
            run.pending,
            run.command.chars().take(100).collect::<String>(),
        );
        if let Some(result) = run.result.as_deref().and_then(|r| r.lines().next()) {
            println!(
                "          → {}",
                result.chars().take(120).collect::<String>()
            );
        }
    }
    EXIT_OK
}

/// `hark sessions`: the sessions that asked, those waiting on you first.
pub async fn sessions(limit: Option<u32>, json: bool) -> i32 {
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
            agent.chars().take(100).collect::<String>(),
        );
    }
    EXIT_OK
}

/// Sends one frame to the operator service and takes its answer, or says
/// why it could not and gives the exit code.
pub(crate) async fn query(frame: &ClientFrame) -> Result<ServerFrame, i32> {
    let socket = socket_path()?;
    client::request(&socket, frame)
        .await
        .map_err(|e| unreachable(&e))
}

fn print_json<T: serde::Serialize>(rows: &[T]) -> i32 {
    println!("{}", serde_json::to_string(rows).unwrap_or_default());
    EXIT_OK
}

pub(crate) fn refused(frame: ServerFrame) -> i32 {
    match frame {
        ServerFrame::Error(e) => {
            eprintln!("hark: {}", e.message);
            if !e.issues.is_empty() {
                eprintln!("{}", describe(&e.issues));
            }
            match e.code {
                ErrorCode::NotPending | ErrorCode::HumanReplyMismatch | ErrorCode::Invalid => {
                    EXIT_REFUSED
                }
                _ => EXIT_FAILED,
            }
        }
        other => {
            eprintln!("hark: unexpected answer from the operator service: {other:?}");
            EXIT_FAILED
        }
    }
}

/// Finds the pending item a full id or a unique id prefix names.
async fn find_pending(socket: &std::path::Path, id: &str) -> Result<Record, i32> {
    let exact = id.parse().ok().map(ItemId);
    let filter = Filter {
        pending: exact.is_none().then_some(true),
        id: exact,
        ..Filter::default()
    };
    let items = match client::request(socket, &ClientFrame::List { filter }).await {
        Ok(ServerFrame::Items { items }) => items,
        Ok(other) => return Err(refused(other)),
        Err(e) => return Err(unreachable(&e)),
    };
    let id = id.to_ascii_lowercase();
    let mut matches = items
        .into_iter()
        .filter(|r| r.id.to_string().starts_with(&id));
    match (matches.next(), matches.next()) {
        (Some(one), None) if one.outcome.is_none() => Ok(one),
        (Some(settled), None) => {
            let outcome = settled
                .outcome
                .as_ref()
                .map(Outcome::name)
                .unwrap_or_default();
            let by = settled
                .replied_by
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            eprintln!(
                "hark: item {} is already settled ({outcome}{by}); exactly one reply counts",
                settled.id
            );
            Err(EXIT_REFUSED)
        }
        (Some(_), Some(_)) => {
            eprintln!("hark: {id:?} names several pending items; give more of the id");
            Err(EXIT_REFUSED)
        }
        (None, _) => {
            eprintln!("hark: no pending item has the id {id:?}; see `hark inbox --all`");
            Err(EXIT_REFUSED)
        }
    }
}

async fn send_reply(socket: &std::path::Path, id: ItemId, reply: WireReply, json: bool) -> i32 {
    let frame = ClientFrame::Reply {
        id,
        reply,
        surface: Some("cli".into()),
    };
    match client::request(socket, &frame).await {
        Ok(ServerFrame::Replied { id, outcome }) => {
            if json {
                println!("{}", json!({"id": id, "outcome": outcome}));
            } else {
                match &outcome {
                    Outcome::Answered(r) => println!(
                        "answered {id}: {}",
                        serde_json::to_string(&r.answers).unwrap_or_default()
                    ),
                    Outcome::Approved { scope } => println!("approved {id} ({})", scope.name()),
                    other => println!("{} {id}", other.name()),
                }
            }
            EXIT_OK
        }
        Ok(other) => refused(other),
        Err(e) => unreachable(&e),
    }
}

/// `hark answer ID --pick LABEL… | --text TEXT | --defaults`.
pub async fn answer(options: AnswerOptions) -> i32 {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if options.picks.is_empty() && options.text.is_none() && !options.defaults {
        eprintln!("hark: say what to answer: --pick LABEL, --text TEXT or --defaults");
        return EXIT_REFUSED;
    }
    let record = match find_pending(&socket, &options.id).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let picks: Picks =
        match picks_from_words(&record.request, &options.picks, options.text.as_deref()) {
            Ok(p) => p,
            Err(issues) => {
                eprintln!(
                    "hark: the answer does not fit the questions:\n{}",
                    describe(&issues)
                );
                return EXIT_REFUSED;
            }
        };
    send_reply(
        &socket,
        record.id,
        WireReply::Answer { answers: picks },
        options.json,
    )
    .await
}

/// `hark skip ID`.
pub async fn skip(id: &str, json: bool) -> i32 {
    reply_to(id, WireReply::Skip, json).await
}

/// `hark approve ID [--scope turn|action|session]` and `hark deny ID`: a
/// verdict on a write-mode approval.
pub async fn verdict(id: &str, verdict: Option<Option<Scope>>, json: bool) -> i32 {
    let reply = match verdict {
        Some(scope) => WireReply::Approve { scope },
        None => WireReply::Deny,
    };
    reply_to(id, reply, json).await
}

/// Sends `reply` to the pending item `id` (or a unique prefix of it).
async fn reply_to(id: &str, reply: WireReply, json: bool) -> i32 {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let record = match find_pending(&socket, id).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    send_reply(&socket, record.id, reply, json).await
}
