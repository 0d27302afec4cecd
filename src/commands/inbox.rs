//! `hark inbox`: what is waiting for you, the history, or a live feed. It
//! talks to the running app or `hark serve` over its socket.
//! Human-readable by default, `--json` for scripts (one JSON value per line).
//! Listings are read page by page with long texts clipped (each cut
//! marked, the entry `"clipped": true`); `hark show ID` fetches one item
//! whole.

use std::collections::HashSet;
use std::path::Path;
use std::time::SystemTime;

use serde_json::json;

use hark_core::bridge::client::{self, Feed};
use hark_core::bridge::views::ItemView;
use hark_core::bridge::wire::{ClientFrame, FeedEvent, ServerFrame};
use hark_core::model::ids::ItemId;
use hark_core::model::item::ItemFilter;
use hark_core::model::item::Outcome;
use hark_core::store::unix_ms;
use hark_core::text::visible;

use crate::cli::{InboxArgs, ItemArgs};
use crate::commands::listings::pages;
use crate::commands::query::{refused, socket_path, unreachable};
use crate::exit::ExitStatus;

/// `hark inbox`.
pub async fn run(options: InboxArgs) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    crate::commands::store_health::warn_if_failing(&socket, options.json).await;
    if options.clear_settled {
        return match client::request(&socket, &ClientFrame::ClearSettled).await {
            Ok(ServerFrame::Cleared { removed }) => {
                if options.json {
                    println!("{}", json!({"removed": removed}));
                } else {
                    println!("cleared {removed} settled item(s) from the history");
                }
                ExitStatus::Success
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
    ExitStatus::Success
}

/// Lists items page by page (pending only when `pending_only`), up to
/// `limit`, each clipped as a listing shows it. An item listed twice (new
/// items arrived between two pages and moved the rest on) is kept once.
pub async fn list_all(
    socket: &Path,
    pending_only: bool,
    limit: Option<u32>,
) -> Result<Vec<ItemView>, ExitStatus> {
    let frame = |offset, limit| ClientFrame::List {
        filter: ItemFilter {
            pending: pending_only.then_some(true),
            limit,
            offset: Some(offset),
            ..ItemFilter::default()
        },
    };
    let page = |frame| match frame {
        ServerFrame::Items { items, next } => Ok((items, next)),
        other => Err(other),
    };
    let mut items = pages(socket, limit, frame, page).await?;
    let mut seen = HashSet::new();
    items.retain(|item| seen.insert(item.id));
    Ok(items)
}

/// Fetches one item whole (nothing clipped).
pub async fn fetch(socket: &Path, id: ItemId) -> Result<ItemView, ExitStatus> {
    match client::request(socket, &ClientFrame::Get { id }).await {
        Ok(ServerFrame::Item { item }) => Ok(*item),
        Ok(other) => Err(refused(other)),
        Err(e) => Err(unreachable(&e)),
    }
}

/// `hark show ID`: one item whole, every text as the agent wrote it (on
/// one line each, control characters made visible), or `--json`.
pub async fn show(ItemArgs { id, json }: ItemArgs) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let item = match find(&socket, &id, false).await {
        Ok(item) => item,
        Err(code) => return code,
    };
    if json {
        println!("{}", serde_json::to_string(&item).unwrap_or_default());
        return ExitStatus::Success;
    }
    println!("{}", line(&item, unix_ms(SystemTime::now())));
    for q in &item.request.questions {
        println!("[{}] {}", visible(&q.header), visible(&q.question));
        for option in &q.options {
            println!(
                "  - {} — {}",
                visible(&option.label),
                visible(&option.description)
            );
        }
    }
    if let Some(approval) = &item.approval {
        println!("{}: {}", visible(&approval.tool), visible(&approval.target));
        println!("{}", visible(&approval.preview));
    }
    ExitStatus::Success
}

/// The item a full id or a unique id prefix names (among the pending items
/// when `pending_only`), fetched whole. The prefix is matched against the
/// clipped listing; only the one item it names is fetched.
pub async fn find(socket: &Path, id: &str, pending_only: bool) -> Result<ItemView, ExitStatus> {
    // Every id starts with the empty prefix: it would pick the only
    // item, whichever that is.
    if id.trim().is_empty() {
        eprintln!("hark: an item id is required; see `hark inbox`");
        return Err(ExitStatus::Refused);
    }
    if let Ok(exact) = id.parse().map(ItemId) {
        return fetch(socket, exact).await;
    }
    let prefix = id.to_ascii_lowercase();
    let items = list_all(socket, pending_only, None).await?;
    let mut matches = items
        .iter()
        .filter(|r| r.id.to_string().starts_with(&prefix));
    let what = if pending_only { "pending item" } else { "item" };
    match (matches.next(), matches.next()) {
        (Some(one), None) => fetch(socket, one.id).await,
        (Some(_), Some(_)) => {
            eprintln!("hark: {id:?} names several {what}s; give more of the id");
            Err(ExitStatus::Refused)
        }
        (None, _) => {
            eprintln!("hark: no {what} has the id {id:?}; see `hark inbox --all`");
            Err(ExitStatus::Refused)
        }
    }
}

async fn watch(socket: &Path, json: bool) -> ExitStatus {
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
            _ = tokio::signal::ctrl_c() => return ExitStatus::Success,
        };
        match frame {
            Ok(ServerFrame::Event { event, item }) => {
                if json {
                    println!("{}", json!({"event": event, "item": item}));
                } else {
                    let verb = match event {
                        FeedEvent::Added => "new",
                        FeedEvent::Parked => "parked",
                        FeedEvent::Settled => "settled",
                    };
                    println!(
                        "{verb:>7}  {}",
                        line(item.as_ref(), unix_ms(SystemTime::now()))
                    );
                }
            }
            Ok(other) => return refused(other),
            Err(e) => {
                eprintln!("hark: {e}");
                return ExitStatus::Failure;
            }
        }
    }
}

/// One item as a line: status, short id, header and question, who asked, and
/// either the time left or what happened.
fn line(r: &ItemView, now_ms: u64) -> String {
    let short = &r.id.to_string()[..8];
    let questions: Vec<String> = r
        .request
        .questions
        .iter()
        .map(|q| format!("[{}] {}", visible(&q.header), visible(&q.question)))
        .collect();
    // Compact; `hark show ID` has the whole command line and directory.
    let who = visible(&r.attribution.line);
    let status = match &r.outcome {
        None if r.parked_ms.is_some() => {
            let waited = now_ms.saturating_sub(r.created_ms) / 1000;
            format!(
                "PARKED    {short}  {} — {who} — the agent is paused until you answer; waiting {waited} s",
                questions.join(" · ")
            )
        }
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
                    let mut what = serde_json::to_string(&resolution.answers).unwrap_or_default();
                    for (question, annotation) in &resolution.annotations {
                        if let Some(notes) = &annotation.notes {
                            what.push_str(&format!(
                                " — note on {}: {}",
                                visible(question),
                                visible(notes)
                            ));
                        }
                    }
                    what
                }
                Outcome::Cancelled { reason } => reason.clone(),
                _ => String::new(),
            };
            let by = r
                .replied_by_label()
                .map(|b| format!(", {b}"))
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
