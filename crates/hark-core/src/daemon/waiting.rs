//! An asker waiting on the operator: the race of the prompter, the registry
//! and the asker's connection until its item settles ([`wait_for_operator`]),
//! what the prompter's answer does to the item ([`apply`]), the prompt kept
//! up once the asker has gone ([`keep_prompting`]), and the frames that tell
//! an asker where its call stands.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;

use crate::bridge::deadline::SocketReader;
use crate::bridge::wire::{ClientFrame, FrameError, ServerFrame, read_frame, write_frame};
use crate::daemon::state::Daemon;
use crate::model::ids::ItemId;
use crate::model::item::{Item, Outcome, Surface};
use crate::model::resolve::Picks;
use crate::platform::WriteHalf;
use crate::prompter::{PromptFuture, Unanswered};
use crate::registry::{Event, Pending, Registry, Reply, Waited};

/// How an item whose agent's own dialog was answered first settles.
pub const ANSWERED_AT_AGENT: &str = "answered in the agent's terminal";

/// Races the prompter, the registry (timeouts, other surfaces) and the peer
/// (cancel or hang-up) until the item settles, then reports the outcome
/// (and returns it; `None` when the peer hung up first). `before_telling`
/// takes the outcome before the peer is told.
pub(super) async fn wait_for_operator(
    mut pending: Pending,
    daemon: &Daemon,
    mut reader: SocketReader,
    mut writer: WriteHalf,
    before_telling: impl FnOnce(&Outcome),
) -> Option<Outcome> {
    let id = pending.item.id;
    if write_frame(&mut writer, &accepted(id, pending.item.timeout))
        .await
        .is_err()
    {
        return None; // dropping `pending` cancels the item
    }
    let mut prompt = daemon
        .prompter
        .ask(&pending.item.session_id, pending.item.clone());
    let mut prompting = true;
    let mut buf = Vec::new();
    let outcome = loop {
        tokio::select! {
            waited = pending.wait() => match waited {
                Waited::Settled(outcome) => break outcome,
                Waited::Parked => {
                    tell(&mut writer, &ServerFrame::Parked { id }).await;
                    if prompting {
                        keep_prompting(daemon, pending.item.clone(), prompt);
                    }
                    return None;
                }
            },
            answered = &mut prompt, if prompting => {
                prompting = false;
                apply(&daemon.registry, daemon.prompter.surface(), &pending.item, answered).await;
            }
            frame = read_frame(&mut reader, &mut buf) => match frame {
                Ok(true) => match serde_json::from_slice::<ClientFrame>(&buf).ok() {
                    Some(ClientFrame::Cancel) => {
                        daemon.registry.cancel(id, "the agent cancelled the call");
                    }
                    Some(ClientFrame::AnsweredAtAgent) => {
                        daemon.registry.cancel(id, ANSWERED_AT_AGENT);
                    }
                    _ => {}
                },
                // A frame left unfinished: the asker is stuck, so its item
                // is cancelled now rather than left to its timeout.
                Err(FrameError::Stalled(stalled)) => {
                    daemon.registry.cancel(id, &format!("the agent's connection stalled: {stalled}"));
                    return None;
                }
                // Hang-up: nobody is listening any more.
                Ok(false) | Err(_) => return None,
            },
        }
    };
    // What the outcome grants holds before the asker hears of it: its next
    // call may come at once.
    before_telling(&outcome);
    let settled = ServerFrame::Settled {
        id,
        outcome: outcome.clone(),
    };
    tell(&mut writer, &settled).await;
    Some(outcome)
}

/// Hands what the prompter returned to the registry, which resolves it.
async fn apply(
    registry: &Registry,
    surface: Surface,
    item: &Item,
    answered: Result<Picks, Unanswered>,
) {
    let id = item.id;
    let result = match answered {
        Ok(picks) => match Reply::from_picks(item, picks) {
            Some(reply) => registry.reply(id, reply, surface).await.map(|_| ()),
            None => {
                tracing::warn!(question_id = %id, "the prompter picked no verdict for the approval");
                Ok(())
            }
        },
        Err(Unanswered::Skipped) if item.approval.is_some() => {
            registry.reply(id, Reply::Deny, surface).await.map(|_| ())
        }
        Err(Unanswered::Skipped) => registry.reply(id, Reply::Skip, surface).await.map(|_| ()),
        Err(Unanswered::Cancelled(reason)) => {
            registry.cancel(id, &reason);
            Ok(())
        }
        Err(Unanswered::NoOperator) => {
            registry.settle_as(id, Outcome::NoOperator);
            Ok(())
        }
    };
    if let Err(e) = result {
        // The item stays pending: another surface may still answer, or it times out.
        tracing::warn!(question_id = %id, "the prompter's reply was refused: {e}");
    }
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
            answered = prompt => apply(&registry, surface, &item, answered).await,
            _ = watched => {}
        }
    });
}

/// Puts every item another host asked (filed from the team's hub) before
/// this daemon's operator as its own are: its prompter asked, the prompt
/// kept up until the item settles here, on another surface or another
/// host. Ends with the registry.
pub(super) async fn prompt_mirrored(daemon: Daemon) {
    let mut events = daemon.registry.subscribe();
    let mut prompted = HashSet::new();
    // Those filed before this began (the hub joined first) are pending.
    let mut items = daemon.registry.pending();
    loop {
        for item in items {
            if item.mirrored && prompted.insert(item.id) {
                let prompt = daemon.prompter.ask(&item.session_id, item.clone());
                keep_prompting(&daemon, item, prompt);
            }
        }
        items = match events.recv().await {
            Ok(Event::Added(item)) if item.mirrored => vec![item],
            Ok(Event::Settled { item, .. }) => {
                prompted.remove(&item.id);
                Vec::new()
            }
            Ok(_) => Vec::new(),
            // Fell behind: whatever is pending and not yet prompted.
            Err(RecvError::Lagged(_)) => daemon.registry.pending(),
            Err(RecvError::Closed) => return,
        };
    }
}

/// The frame that tells an asker its call is taken and how long it may wait.
pub(super) fn accepted(id: ItemId, timeout: Duration) -> ServerFrame {
    ServerFrame::Accepted {
        id,
        timeout_ms: millis(timeout),
    }
}

/// `duration` in whole milliseconds, as frames carry it.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Writes `frame` to the peer, which may have gone: a peer that hung up has
/// nothing more to hear, and its hang-up is noticed where it is read.
pub(super) async fn tell(writer: &mut WriteHalf, frame: &ServerFrame) {
    let _ = write_frame(writer, frame).await;
}
