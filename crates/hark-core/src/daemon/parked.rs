//! Serving the items that park (see [`crate::registry`]'s parking): the
//! same tool use asking again, the paused run waiting for the outcome, and
//! the parked items put to the operator again after a restart.

use std::time::Duration;

use crate::bridge::deadline::SocketReader;
use crate::bridge::wire::{Caller, ErrorCode, ServerFrame, WireError, read_frame, write_frame};
use crate::daemon::state::{Daemon, effective_timeout};
use crate::daemon::waiting::{accepted, keep_prompting, millis, tell};
use crate::model::ids::SessionId;
use crate::model::item::Outcome;
use crate::platform::WriteHalf;
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
        Found::Settled { id, .. } => (*id, Duration::ZERO),
        Found::Pending(item) => (
            item.id,
            effective_timeout(caller.timeout_secs, daemon.default_timeout),
        ),
    };
    if write_frame(&mut writer, &accepted(id, timeout))
        .await
        .is_err()
    {
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
                while let Ok(true) = read_frame(&mut reader, &mut buf).await {}
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
                                after_ms: millis(timeout),
                            },
                        }
                    };
                    tell(&mut writer, &frame).await;
                    return;
                }
                () = hung_up => return,
            }
        }
    };
    tell(&mut writer, &ServerFrame::Settled { id, outcome }).await;
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
    tell(&mut writer, &frame).await;
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
