//! The registry of pending items.
//!
//! Shaped like mini-redis's `Db`: one cheap-to-clone handle around
//! `Arc<Shared>`, a std `Mutex` held only for short sections, and an ordered
//! set of deadlines driven by one background task. Time is tokio's, so tests
//! control it with a paused clock.
//!
//! Settling removes the item under the lock, so exactly one settlement wins:
//! an answer, a skip, a timeout or a cancellation, whichever comes first.
//!
//! Items and outcomes are recorded in the store as they happen; a write the
//! store refuses waits in memory until it can be made (see [`recording`]),
//! and the item is served all the same.

mod decided;
mod parking;
mod recording;
mod replied;

pub use decided::{Decider, Deciding, Decision, Offer, Undecided};
pub use parking::{Found, Waited};
pub use recording::{RETRY, StoreHealth};

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use tokio::sync::{Notify, broadcast, oneshot};
use tokio::time::Instant;

use crate::model::approval::Scope;
use crate::model::approval::{Approval, Verdict};
use crate::model::ids::{Clock, ItemId, SessionId};
use crate::model::item::{Item, Outcome, SubAgent, Surface};
use crate::model::resolve::{Answer, Pick, Picks};
use crate::model::validate::Issue;
use crate::store::Store;
use crate::trace;
use replied::outcome_of;

/// A handle to the registry. Clones share the same items.
#[derive(Debug, Clone)]
pub struct Registry {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Where every item and outcome is recorded, when there is a store.
    store: Option<Arc<Store>>,
    /// What settlements are stamped with: the store's clock, or the system's.
    clock: Clock,
    /// Item added / parked / settled, for surfaces that follow the inbox.
    events: broadcast::Sender<Event>,
    /// Wakes the expiry task when an earlier deadline arrives or on shutdown.
    expiry: Notify,
    /// The writes the store refused, until it takes them.
    backlog: Mutex<recording::Backlog>,
    /// Wakes the retry task when the store begins to fail or on shutdown.
    retry: Notify,
    /// Decides every settlement, when the daemon shares its items (the
    /// team's hub); see [`decided`].
    decider: OnceLock<Arc<dyn Decider>>,
}

#[derive(Debug, Default)]
struct State {
    /// Items waiting on the operator.
    pending: HashMap<ItemId, Entry>,
    /// Deadlines in order, so the expiry task sleeps until the first one.
    expirations: BTreeSet<(Instant, ItemId)>,
    /// Set once: no new items are accepted and the expiry task ends.
    shutdown: bool,
    /// The latest outcomes of items that park, by tool use id, for their
    /// resumed calls even while the store refuses writes (newest last).
    settled_parking: std::collections::VecDeque<(String, SessionId, ItemId, Outcome)>,
    /// Tool calls a sub-agent makes, as its host announced them, until the
    /// call asks (newest last; see [`Registry::note_sub_agent`]).
    sub_agents: std::collections::VecDeque<(String, SessionId, SubAgent)>,
}

#[derive(Debug)]
struct Entry {
    item: Arc<Item>,
    /// When it was opened (tokio clock), for `duration_ms`.
    opened: Instant,
    /// When it times out (or parks); `None` once parked: no timeout.
    deadline: Option<Instant>,
    /// Tells the asker the outcome, or that the item parked (then it is
    /// gone: a parked item has no asker waiting on it).
    settle: Option<oneshot::Sender<Waited>>,
    /// Others waiting for the outcome: a resumed call of the same tool use,
    /// the run that is paused on it.
    watchers: Vec<oneshot::Sender<Outcome>>,
}

/// What the operator did, as any surface reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Answers to a question set (omitted questions take their defaults).
    Answer(Answer),
    /// Skip a question set: proceed without confirmed answers.
    Skip,
    /// A verdict on an approval: allow, for a scope (the approval's
    /// default scope when `None`), or deny.
    Approve(Option<Scope>),
    Deny,
    /// Withdraw it (and the run waiting on it): it settles as cancelled
    /// by the operator ([`CANCELLED_BY_OPERATOR`]).
    Cancel,
}

/// The reason an item the operator withdrew records.
pub const CANCELLED_BY_OPERATOR: &str = "the operator cancelled the run";

impl From<Verdict> for Reply {
    fn from(verdict: Verdict) -> Reply {
        match verdict {
            Verdict::Allow(scope) => Reply::Approve(Some(scope)),
            Verdict::Deny => Reply::Deny,
        }
    }
}

impl Reply {
    /// The reply a surface's picks stand for on `item`. A surface shows an
    /// approval as its one question and returns the picked option, whose
    /// label is the verdict; a question set takes the picks as answers.
    /// `None`: the picks name no verdict of the approval.
    pub fn from_picks(item: &Item, picks: Picks) -> Option<Reply> {
        if item.approval.is_none() {
            return Some(Reply::Answer(picks.into()));
        }
        let question = &item.request.questions.first()?.question;
        let label = match picks.get(question)? {
            Pick::Label(label) => label.as_str(),
            Pick::Labels(labels) => labels.first()?.as_str(),
            _ => return None,
        };
        Approval::verdict_of(label).map(Reply::from)
    }

    /// The verdict on an approval whose option labelled `label` the
    /// operator picked, as the app's modal and the web page send it (the
    /// label-to-verdict mapping is [`Approval::verdict_of`]).
    pub fn verdict(label: &str) -> Result<Reply, NotAVerdict> {
        Approval::verdict_of(label)
            .map(Reply::from)
            .ok_or_else(|| NotAVerdict(label.to_owned()))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Reply::Answer(_) => "answer",
            Reply::Skip => "skip",
            Reply::Approve(_) => "approve",
            Reply::Deny => "deny",
            Reply::Cancel => "cancel",
        }
    }
}

/// A change in the inbox, as followers see it.
#[derive(Debug, Clone)]
pub enum Event {
    /// A dispatched run started or ended (its record changed in the store).
    RunChanged,
    Added(Arc<Item>),
    /// An item parked: its agent is paused until it settles.
    Parked(Arc<Item>),
    Settled {
        item: Arc<Item>,
        outcome: Outcome,
        replied_by: Option<Surface>,
        /// When it settled, by the registry's clock.
        at: SystemTime,
    },
    /// The store began or stopped refusing writes.
    StoreHealth(StoreHealth),
    /// A web device was paired or revoked (a revoked one's open streams end).
    DevicesChanged,
}

/// A label that is none of an approval's options (see [`Reply::verdict`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not one of the approval's options")]
pub struct NotAVerdict(pub String);

/// Why a reply was refused. The item is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("item {0} is not pending (already settled, or never asked)")]
    NotPending(ItemId),
    #[error("the answers do not fit the questions:\n{}", crate::model::validate::describe(.0))]
    Invalid(Vec<Issue>),
    /// An approval was granted for a scope it does not offer (an external
    /// effect is allowed for the action alone).
    #[error("item {id} cannot be approved for the {} scope; an external effect is allowed for this action only", .scope.name())]
    NotOffered { id: ItemId, scope: Scope },
    /// The reply is of the wrong shape for the item (answers to an approval,
    /// a verdict on a question set). HTTP-ish callers report it as 409.
    #[error("item {id} is a {kind} and takes {takes}, not {got}")]
    HumanReplyMismatch {
        id: ItemId,
        kind: &'static str,
        takes: &'static str,
        got: &'static str,
    },
    /// Another settlement won first on the team's hub (`by` names it:
    /// "answered by alice on devbox").
    #[error("item {id} was {by} first")]
    DecidedElsewhere { id: ItemId, by: String },
    /// The team's hub could not decide; the item is still pending.
    #[error("{0}; the item is still pending")]
    Undecided(String),
}

/// An opened item, held by the asker. Dropping it before the item settles
/// (or parks) cancels the item, so the registry entry is torn down on every
/// exit path.
#[derive(Debug)]
pub struct Pending {
    pub item: Arc<Item>,
    outcome: Option<oneshot::Receiver<Waited>>,
    registry: Registry,
}

impl Pending {
    /// Waits for the item to settle, whoever settles it, or to park.
    pub async fn wait(&mut self) -> Waited {
        let Some(rx) = self.outcome.as_mut() else {
            return Waited::Settled(Outcome::Cancelled {
                reason: "outcome already taken".into(),
            });
        };
        let waited = rx.await.unwrap_or_else(|_| {
            Waited::Settled(Outcome::Cancelled {
                reason: "hark is shutting down".into(),
            })
        });
        self.outcome = None;
        waited
    }

    /// Waits for the item to settle, whoever settles it (through a park).
    pub async fn outcome(&mut self) -> Outcome {
        match self.wait().await {
            Waited::Settled(outcome) => outcome,
            Waited::Parked => match self.registry.watch(self.item.id) {
                Some(watched) => watched.await.unwrap_or_else(|_| Outcome::Cancelled {
                    reason: "hark is shutting down".into(),
                }),
                None => Outcome::Cancelled {
                    reason: "the item is gone".into(),
                },
            },
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.outcome.is_some() {
            self.registry.cancel(self.item.id, "the agent went away");
        }
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// Creates a registry with no store and spawns its expiry task on the
    /// current runtime.
    pub fn new() -> Registry {
        Registry::with_store(None)
    }

    /// Creates a registry that records every item and outcome in `store`.
    pub fn with_store(store: Option<Arc<Store>>) -> Registry {
        let clock = store
            .as_ref()
            .map_or_else(Clock::system, |s| s.clock().clone());
        let shared = Arc::new(Shared {
            clock,
            store,
            events: broadcast::channel(EVENT_BUFFER).0,
            state: Mutex::new(State::default()),
            expiry: Notify::new(),
            backlog: Mutex::default(),
            retry: Notify::new(),
            decider: OnceLock::new(),
        });
        tokio::spawn(expire_items(shared.clone()));
        if shared.store.is_some() {
            tokio::spawn(recording::retry_backlog(shared.clone()));
        }
        Registry { shared }
    }

    /// The clock settlements are stamped with.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// Follows items being added and settled.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// The store items are recorded in, if any.
    pub fn store(&self) -> Option<&Arc<Store>> {
        self.shared.store.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens an item. After shutdown it settles at once as cancelled.
    pub fn open(&self, item: Item) -> Pending {
        let (tx, rx) = oneshot::channel();
        let item = Arc::new(item);
        let now = Instant::now();
        let deadline = now + item.timeout;
        let wake = {
            let mut state = self.lock();
            if state.shutdown {
                drop(state);
                let _ = tx.send(Waited::Settled(Outcome::Cancelled {
                    reason: "hark is shutting down".into(),
                }));
                return Pending {
                    item,
                    outcome: Some(rx),
                    registry: self.clone(),
                };
            }
            let earliest = state.expirations.first().is_none_or(|(d, _)| deadline < *d);
            state.expirations.insert((deadline, item.id));
            state.pending.insert(
                item.id,
                Entry {
                    item: item.clone(),
                    opened: now,
                    deadline: Some(deadline),
                    settle: Some(tx),
                    watchers: Vec::new(),
                },
            );
            earliest
        };
        self.record(recording::Write::Insert(item.clone()));
        trace::asked(&item);
        let _ = self.shared.events.send(Event::Added(item.clone()));
        if wake {
            self.shared.expiry.notify_one();
        }
        Pending {
            item,
            outcome: Some(rx),
            registry: self.clone(),
        }
    }

    /// Applies the operator's reply. Answers are resolved against the request
    /// (defaults filled in); a reply that does not fit is refused and the item
    /// stays pending. Exactly one reply wins. `surface` names who replied
    /// (`desktop`, `terminal`, `cli`, `script`) for the record.
    ///
    /// With a decider (the team's hub), the reply is offered to it and the
    /// item settles with whichever reply won there.
    pub async fn reply(
        &self,
        id: ItemId,
        reply: Reply,
        surface: Surface,
    ) -> Result<Outcome, ReplyError> {
        let Some(item) = self.get(id) else {
            return Err(self.not_pending(id));
        };
        let outcome = outcome_of(&item, reply)?;
        match self.decider() {
            None => self
                .settle(id, Some(surface), |_| outcome)
                .ok_or(ReplyError::NotPending(id)),
            Some(decider) => {
                let offer = Offer {
                    outcome,
                    replied_by: Some(surface),
                };
                self.decide_reply(decider, item, offer).await
            }
        }
    }

    /// Settles an item as cancelled. Returns false when it was not pending.
    pub fn cancel(&self, id: ItemId, reason: &str) -> bool {
        self.settle_as(
            id,
            Outcome::Cancelled {
                reason: reason.to_owned(),
            },
        )
    }

    /// Settles an item with an unanswered outcome decided elsewhere (cancel,
    /// no operator). Returns false when it was not pending (or is mirrored
    /// from another host, which settles it).
    pub fn settle_as(&self, id: ItemId, outcome: Outcome) -> bool {
        self.conclude(id, outcome)
    }

    /// Tells followers a run's record changed.
    pub fn run_changed(&self) {
        let _ = self.shared.events.send(Event::RunChanged);
    }

    /// Tells followers a web device was paired or revoked.
    pub fn devices_changed(&self) {
        let _ = self.shared.events.send(Event::DevicesChanged);
    }

    /// The item, while it is pending.
    pub fn get(&self, id: ItemId) -> Option<Arc<Item>> {
        self.lock().pending.get(&id).map(|e| e.item.clone())
    }

    /// Every pending item, oldest first.
    pub fn pending(&self) -> Vec<Arc<Item>> {
        let mut items: Vec<Arc<Item>> = self
            .lock()
            .pending
            .values()
            .map(|e| e.item.clone())
            .collect();
        items.sort_by_key(|i| i.created_at);
        items
    }

    /// Stops accepting items and cancels every pending one, so each waiting
    /// agent gets its error at once. A parked item is kept: no agent waits
    /// on it, and it waits for the operator across the restart; nor is a
    /// mirrored one: its own host settles it.
    pub fn shutdown(&self, reason: &str) {
        let ids: Vec<ItemId> = {
            let mut state = self.lock();
            state.shutdown = true;
            state
                .pending
                .values()
                .filter(|e| e.item.parked_at().is_none() && !e.item.mirrored)
                .map(|e| e.item.id)
                .collect()
        };
        for id in ids {
            self.cancel(id, reason);
        }
        self.flush_on_shutdown();
        self.shared.expiry.notify_one();
        self.shared.retry.notify_one();
    }

    /// Removes the item if it is still pending and delivers its outcome.
    fn settle(
        &self,
        id: ItemId,
        surface: Option<Surface>,
        outcome: impl FnOnce(&Entry) -> Outcome,
    ) -> Option<Outcome> {
        let (entry, outcome) = {
            let mut state = self.lock();
            let entry = state.pending.remove(&id)?;
            if let Some(deadline) = entry.deadline {
                state.expirations.remove(&(deadline, id));
            }
            let outcome = outcome(&entry);
            if let Some(parking) = &entry.item.parking {
                parking::remember(&mut state, &entry.item, &parking.tool_use_id, &outcome);
            }
            (entry, outcome)
        };
        // Recorded (or held until the store takes it) before the asker
        // hears of it, so no answer an agent acted on is lost.
        let at = self.shared.clock.now();
        self.record(recording::Write::Settle {
            item: entry.item.clone(),
            outcome: outcome.clone(),
            replied_by: surface.clone(),
            at,
        });
        trace::settled(
            &entry.item,
            &outcome,
            entry.opened.elapsed(),
            surface.as_ref(),
        );
        let _ = self.shared.events.send(Event::Settled {
            item: entry.item.clone(),
            outcome: outcome.clone(),
            replied_by: surface,
            at,
        });
        // The asker may be gone already; the outcome is still traced.
        if let Some(asker) = entry.settle {
            let _ = asker.send(Waited::Settled(outcome.clone()));
        }
        for watcher in entry.watchers {
            let _ = watcher.send(outcome.clone());
        }
        Some(outcome)
    }

    /// Times out every item whose deadline has passed; returns the next deadline.
    fn expire_due(&self) -> Option<Instant> {
        let now = Instant::now();
        loop {
            let due = {
                let state = self.lock();
                if state.shutdown {
                    return None;
                }
                match state.expirations.first() {
                    Some(&(deadline, id)) if deadline <= now => (deadline, id),
                    Some(&(deadline, _)) => return Some(deadline),
                    None => return None,
                }
            };
            // An item whose agent can be resumed parks: no timeout
            // manufactures an answer from silence.
            let (deadline, due) = due;
            if self.park(due).is_none() {
                // The bounded wait it was given, which is what it timed out
                // after; not the moment a busy machine woke the timer.
                let after_ms = self.lock().pending.get(&due).map_or(0, |entry| {
                    millis(deadline.saturating_duration_since(entry.opened))
                });
                if !self.conclude(due, Outcome::TimedOut { after_ms }) {
                    // Not pending here: its deadline is stale.
                    self.lock().expirations.remove(&(deadline, due));
                }
            }
        }
    }

    fn is_shut_down(&self) -> bool {
        self.lock().shutdown
    }
}

/// How many inbox events a slow follower may fall behind before it must
/// re-list (it is told it lagged).
const EVENT_BUFFER: usize = 1024;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The expiry task: sleeps until the earliest deadline, or until woken.
async fn expire_items(shared: Arc<Shared>) {
    let registry = Registry { shared };
    while !registry.is_shut_down() {
        match registry.expire_due() {
            Some(when) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(when) => {}
                    _ = registry.shared.expiry.notified() => {}
                }
            }
            None => registry.shared.expiry.notified().await,
        }
    }
}

#[cfg(test)]
mod decided_tests;
#[cfg(test)]
mod tests;
