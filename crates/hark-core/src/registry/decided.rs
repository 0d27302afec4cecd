//! Items whose reply is decided elsewhere: by the team's hub, when the
//! daemon has one (`hark-hub`). The registry stays the one place items
//! settle, but with a [`Decider`] set, no settlement is its own to make:
//!
//! - an operator's reply is *offered* to the decider, and the item settles
//!   with the reply the decider says won, which may be another operator's
//!   (the reply is then refused with [`ReplyError::DecidedElsewhere`]);
//! - the asker's side of an item asked here (its timeout, by this host's
//!   clock, or its agent going away) is offered the same way, so an answer
//!   that won first is the one the agent gets;
//! - an item *mirrored* from another host ([`Registry::open_mirrored`]) has
//!   no deadline and no asker here: its host times it out, and it settles
//!   when the decider's winner arrives ([`Registry::apply`]).
//!
//! When the decider cannot decide (the hub unreachable), a reply is
//! refused and the item stays pending; the asker's side settles here as
//! offered, since an agent must not wait on a hub that is gone — the
//! decider keeps the offer and files it when the hub comes back.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::time::Instant;

use super::recording::Write;
use super::{Entry, Event, Registry, ReplyError};
use crate::model::ids::ItemId;
use crate::model::item::{Item, Outcome, Surface};
use crate::trace;

/// What a settlement offers the decider: an outcome, and who replied
/// (`None`: the asker's side — a timeout, a cancellation).
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub outcome: Outcome,
    pub replied_by: Option<Surface>,
}

/// The settlement that won: the one every host applies.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub outcome: Outcome,
    pub replied_by: Option<Surface>,
    /// It is the offer that was made (this host's reply won).
    pub ours: bool,
}

/// The decider could not say which settlement won (unreachable, or its
/// answer unknown after a timeout); nothing was settled here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the team's hub did not decide: {0}")]
pub struct Undecided(pub String);

/// The future a decider returns.
pub type Deciding = Pin<Box<dyn Future<Output = Result<Decision, Undecided>> + Send>>;

/// Decides which settlement of an item wins, once, for every host.
pub trait Decider: Send + Sync + fmt::Debug {
    fn decide(&self, item: Arc<Item>, offer: Offer) -> Deciding;
}

impl Registry {
    /// Has every settlement from now on decided by `decider`. Set once; a
    /// second call is ignored (returns false).
    pub fn decide_through(&self, decider: Arc<dyn Decider>) -> bool {
        self.shared.decider.set(decider).is_ok()
    }

    pub(super) fn decider(&self) -> Option<Arc<dyn Decider>> {
        self.shared.decider.get().cloned()
    }

    /// A reply offered to the decider: settles with the winner, and says
    /// whether it was this one.
    pub(super) async fn decide_reply(
        &self,
        decider: Arc<dyn Decider>,
        item: Arc<Item>,
        offer: Offer,
    ) -> Result<Outcome, ReplyError> {
        let id = item.id;
        let decision = decider
            .decide(item, offer)
            .await
            .map_err(|e| ReplyError::Undecided(e.0))?;
        self.apply(id, &decision);
        if decision.ours {
            Ok(decision.outcome)
        } else {
            Err(ReplyError::DecidedElsewhere {
                id,
                by: decided_by(&decision),
            })
        }
    }

    /// Why a reply to `id` finds nothing pending: another operator of the
    /// team won on the hub (the store names them), or it is just settled.
    pub(super) fn not_pending(&self, id: ItemId) -> ReplyError {
        let record = self.store().and_then(|store| store.get(id).ok().flatten());
        match record {
            Some(crate::store::Record {
                outcome: Some(outcome),
                replied_remote: Some(remote),
                ..
            }) => ReplyError::DecidedElsewhere {
                id,
                by: format!("{} by {remote}", outcome.name()),
            },
            _ => ReplyError::NotPending(id),
        }
    }

    /// Settles an item with the asker's side's outcome: at once without a
    /// decider; with one, once it decides (an answer may have won first).
    /// False when the item is not pending here, or is mirrored (its own
    /// host settles it).
    pub(super) fn conclude(&self, id: ItemId, outcome: Outcome) -> bool {
        // Without a runtime to decide on (a registry dropped late), it
        // settles here as offered.
        let (Some(decider), Ok(runtime)) = (self.decider(), tokio::runtime::Handle::try_current())
        else {
            return self.settle(id, None, |_| outcome).is_some();
        };
        let item = {
            let mut state = self.lock();
            let Some(entry) = state.pending.get_mut(&id) else {
                return false;
            };
            if entry.item.mirrored {
                return false;
            }
            let item = entry.item.clone();
            if let Some(deadline) = entry.deadline.take() {
                state.expirations.remove(&(deadline, id));
            }
            item
        };
        let registry = self.clone();
        runtime.spawn(async move {
            let offer = Offer {
                outcome: outcome.clone(),
                replied_by: None,
            };
            let decision = decider.decide(item, offer).await.unwrap_or(Decision {
                outcome,
                replied_by: None,
                ours: true,
            });
            registry.apply(id, &decision);
        });
        true
    }

    /// Files items other hosts asked, as the hub carries them: each shows on
    /// every surface until [`Registry::apply`] settles it, and all are
    /// recorded in one write. The ones filed: not those pending here
    /// already, none while the registry is shutting down.
    pub fn open_mirrored(&self, items: Vec<Item>) -> Vec<ItemId> {
        let filed: Vec<Arc<Item>> = {
            let mut state = self.lock();
            if state.shutdown {
                return Vec::new();
            }
            let mut filed = Vec::with_capacity(items.len());
            for mut item in items {
                if state.pending.contains_key(&item.id) {
                    continue;
                }
                item.mirrored = true;
                let item = Arc::new(item);
                state.pending.insert(
                    item.id,
                    Entry {
                        item: item.clone(),
                        opened: Instant::now(),
                        deadline: None,
                        settle: None,
                        watchers: Vec::new(),
                    },
                );
                filed.push(item);
            }
            filed
        };
        self.record_all(filed.iter().cloned().map(Write::Insert).collect());
        for item in &filed {
            trace::asked(item);
            let _ = self.shared.events.send(Event::Added(item.clone()));
        }
        filed.iter().map(|item| item.id).collect()
    }

    /// Settles an item with the decider's winner (an answer given on
    /// another host, or this host's reply coming back). False when it was
    /// not pending here.
    pub fn apply(&self, id: ItemId, decision: &Decision) -> bool {
        let outcome = decision.outcome.clone();
        self.settle(id, decision.replied_by.clone(), |_| outcome)
            .is_some()
    }
}

/// How a refused reply names the winner.
fn decided_by(decision: &Decision) -> String {
    match &decision.replied_by {
        Some(Surface::Hub(remote)) => format!("{} by {remote}", decision.outcome.name()),
        Some(surface) => format!("{} by {}", decision.outcome.name(), surface.name()),
        None => format!("{} by its asker", decision.outcome.name()),
    }
}
