//! `hark inbox`: what is waiting for you, the history, or a live feed. It
//! talks to the running app or `hark serve` over its socket.
//! Human-readable by default, `--json` for scripts (one JSON value per line).

use std::time::SystemTime;

use serde_json::json;

use hark_core::bridge::client::{self, Feed};
use hark_core::bridge::views::ItemView;
use hark_core::bridge::wire::{ClientFrame, FeedEvent, ServerFrame};
use hark_core::model::item::ItemFilter;
use hark_core::model::item::Outcome;
use hark_core::store::unix_ms;
use hark_core::text::visible;

use crate::cli::InboxArgs;
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

/// Items listed per request, so that each answer stays well under a frame.
const PAGE: u32 = 200;

/// Lists items page by page (pending only when `pending_only`), up to `limit`.
async fn list_all(
    socket: &std::path::Path,
    pending_only: bool,
    limit: Option<u32>,
) -> Result<Vec<ItemView>, ExitStatus> {
    let mut items = Vec::new();
    loop {
        let want = limit.map_or(PAGE, |l| l.saturating_sub(items.len() as u32).min(PAGE));
        if want == 0 {
            return Ok(items);
        }
        let filter = ItemFilter {
            pending: pending_only.then_some(true),
            limit: Some(want),
            offset: Some(items.len() as u32),
            ..ItemFilter::default()
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

async fn watch(socket: &std::path::Path, json: bool) -> ExitStatus {
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
    let mut who = format!("session {}", visible(r.session_id.as_str()));
    if let Some(command) = &r.asker.command {
        who.push_str(&format!(" · {}", visible(command)));
    }
    if let Some(cwd) = &r.asker.cwd {
        who.push_str(&format!(" in {}", visible(cwd)));
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
