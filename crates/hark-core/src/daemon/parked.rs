//! Serving the items that park (see [`crate::registry`]'s parking): the
//! same tool use asking again, the paused run waiting for the outcome, and
//! the operator's prompt kept up while no asker waits.

use std::sync::Arc;

use crate::platform::WriteHalf;

use crate::bridge::deadline::SocketReader;
use crate::bridge::wire::{Caller, ErrorCode, ServerFrame, WireError, write_frame};
use crate::daemon::listener::{Daemon, apply, effective_timeout};
use crate::model::ids::SessionId;
use crate::model::item::{Item, Outcome};
use crate::prompter::PromptFuture;
use crate::registry::Found;

/// The item the caller's tool use asked already, if it names one.
pub(super) fn find(daemon: &Daemon, caller: &Caller) -> Option<Found> {
    let tool_use_id = caller.tool_use_id.as_deref()?;
    match daemon.registry.by_tool_use(tool_use_id, &caller.session()) {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(tool_use_id, "cannot look up the tool use's item: {e}");
            None
        }
    }
}

/// Serves a call of a tool use whose item exists: its outcome at once when
/// it has settled; else it waits on the item for its bounded wait, and then
/// hears that it parked (a caller that parks) or that it timed out (the
/// item itself stays parked for the operator).
pub(super) async fn serve_again(
    found: Found,
    daemon: &Daemon,
    caller: &Caller,
    reader: SocketReader,
    mut writer: WriteHalf,
) {
    let (id, timeout) = match &found {
        Found::Settled { id, .. } => (*id, std::time::Duration::ZERO),
        Found::Pending(item) => (
            item.id,
            effective_timeout(caller.timeout_secs, daemon.default_timeout),
        ),
    };
    let accepted = ServerFrame::Accepted {
        id,
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    };
    if write_frame(&mut writer, &accepted).await.is_err() {
        return;
    }
    let outcome = match found {
        Found::Settled { outcome, .. } => outcome,
        Found::Pending(item) => {
            let Some(watched) = daemon.registry.watch(item.id) else {
                return;
            };
            // Only a hang-up matters from the caller now.
            let hung_up = async move {
                let mut reader = reader;
                let mut buf = Vec::new();
                while let Ok(true) = crate::bridge::wire::read_frame(&mut reader, &mut buf).await {}
            };
            tokio::select! {
                settled = watched => match settled {
                    Ok(outcome) => outcome,
                    Err(_) => return,
                },
                () = tokio::time::sleep(timeout) => {
                    let frame = if caller.parks {
                        ServerFrame::Parked { id }
                    } else {
                        ServerFrame::Settled {
                            id,
                            outcome: Outcome::TimedOut {
                                after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                            },
                        }
                    };
                    let _ = write_frame(&mut writer, &frame).await;
                    return;
                }
                () = hung_up => return,
            }
        }
    };
    let _ = write_frame(&mut writer, &ServerFrame::Settled { id, outcome }).await;
}

/// Waits for the item `tool_use_id` asked in `session` to settle, and
/// says how.
pub(super) async fn await_settled(
    daemon: &Daemon,
    tool_use_id: &str,
    session: &SessionId,
    mut writer: WriteHalf,
) {
    let frame = match daemon.registry.by_tool_use(tool_use_id, session) {
        Ok(Some(Found::Settled { id, outcome })) => ServerFrame::Settled { id, outcome },
        Ok(Some(Found::Pending(item))) => match daemon.registry.watch(item.id) {
            Some(watched) => match watched.await {
                Ok(outcome) => ServerFrame::Settled {
                    id: item.id,
                    outcome,
                },
                Err(_) => return,
            },
            None => return,
        },
        Ok(None) => ServerFrame::Error(WireError::new(
            ErrorCode::NotFound,
            format!("no item was asked by the tool use {tool_use_id}"),
        )),
        Err(e) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
    };
    let _ = write_frame(&mut writer, &frame).await;
}

/// Keeps the operator's prompt of an item that parked up until the item
/// settles (the prompter's answer settles it; a settlement elsewhere drops
/// the prompt, which withdraws it).
pub(super) fn keep_prompting(daemon: &Daemon, item: Arc<Item>, prompt: PromptFuture) {
    let Some(watched) = daemon.registry.watch(item.id) else {
        return;
    };
    let registry = daemon.registry.clone();
    let surface = daemon.prompter.surface();
    tokio::spawn(async move {
        tokio::select! {
            answered = prompt => apply(&registry, surface, &item, answered),
            _ = watched => {}
        }
    });
}

/// Puts every parked item (restored after a restart) in front of the
/// operator again.
pub fn prompt_parked(daemon: &Daemon) {
    for item in daemon.registry.pending() {
        if item.parked_at().is_some() {
            let prompt = daemon.prompter.ask(&item.session_id, item.clone());
            keep_prompting(daemon, item, prompt);
        }
    }
}
