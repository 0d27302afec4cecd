//! `hark answer`, `hark skip`, `hark approve` and `hark deny`: the
//! operator's reply to a pending item, from any terminal. The daemon's reply
//! rules decide; an id prefix is enough.

use std::path::Path;

use serde_json::json;

use hark_core::bridge::client;
use hark_core::bridge::wire::{ClientFrame, ServerFrame, WireReply};
use hark_core::model::item::{ItemId, Outcome};
use hark_core::model::resolve::{Picks, picks_from_words};
use hark_core::model::validate::describe;
use hark_core::store::{Filter, Record};

use crate::cli::{AnswerArgs, ApproveArgs, ItemArgs};
use crate::commands::query::{refused, socket_path, unreachable};
use crate::exit::ExitStatus;

/// Finds the pending item a full id or a unique id prefix names.
async fn find_pending(socket: &Path, id: &str) -> Result<Record, ExitStatus> {
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
            Err(ExitStatus::Refused)
        }
        (Some(_), Some(_)) => {
            eprintln!("hark: {id:?} names several pending items; give more of the id");
            Err(ExitStatus::Refused)
        }
        (None, _) => {
            eprintln!("hark: no pending item has the id {id:?}; see `hark inbox --all`");
            Err(ExitStatus::Refused)
        }
    }
}

async fn send_reply(socket: &Path, id: ItemId, reply: WireReply, json: bool) -> ExitStatus {
    let frame = ClientFrame::Reply { id, reply };
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
            ExitStatus::Success
        }
        Ok(other) => refused(other),
        Err(e) => unreachable(&e),
    }
}

/// `hark answer ID --pick LABEL… | --text TEXT | --defaults`.
pub async fn answer(options: AnswerArgs) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if options.picks.is_empty() && options.text.is_none() && !options.defaults {
        eprintln!("hark: say what to answer: --pick LABEL, --text TEXT or --defaults");
        return ExitStatus::Refused;
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
                return ExitStatus::Refused;
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
pub async fn skip(item: ItemArgs) -> ExitStatus {
    reply_to(item, WireReply::Skip).await
}

/// `hark approve ID [--scope turn|action|session]`: allow a write-mode
/// approval (its default scope without `--scope`).
pub async fn approve(args: ApproveArgs) -> ExitStatus {
    let scope = args.scope.map(Into::into);
    reply_to(args.item, WireReply::Approve { scope }).await
}

/// `hark deny ID`: the agent stays read-only.
pub async fn deny(item: ItemArgs) -> ExitStatus {
    reply_to(item, WireReply::Deny).await
}

/// Sends `reply` to the pending item `id` (or a unique prefix of it).
async fn reply_to(ItemArgs { id, json }: ItemArgs, reply: WireReply) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let record = match find_pending(&socket, &id).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    send_reply(&socket, record.id, reply, json).await
}
