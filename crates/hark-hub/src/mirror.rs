//! A daemon on the hub: its own items published, the team's filed into its
//! registry, and every settlement decided on the hub and applied here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::kv::{Entry, Operation};
use futures_util::StreamExt;
use hark_core::model::ids::ItemId;
use hark_core::model::item::{Item, Remote, Surface};
use hark_core::registry::{Decider, Deciding, Decision, Event, Offer, Registry, Undecided};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::wire::{Decided, Origin, Place, Posted, Side, VERSION};
use crate::{Hub, HubError, Role, read};

/// The hub's tasks for one registry; they end when it is dropped.
#[derive(Debug)]
pub struct Serving {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// How many decisions that came before their item are kept for it.
const EARLY: usize = 4096;
/// At most how many values read at once are handled together.
const BURST: usize = 256;
/// How long a write the hub did not take waits for the client to connect
/// again before it is tried anyway (it may have failed while connected: a
/// cluster without its quorum).
const AGAIN: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Mirror {
    hub: Hub,
    registry: Registry,
    /// This host's replies on their way to the hub, by nonce: the surface
    /// they came from, for the record when the hub's echo comes first.
    offers: Arc<Mutex<HashMap<String, Surface>>>,
    /// Decisions read before their item was filed here.
    early: Mutex<VecDeque<(ItemId, Decision)>>,
    /// Some early decision was let go for want of room.
    overflowed: AtomicBool,
}

impl Hub {
    /// Puts `registry` on the hub: from now on its settlements are decided
    /// there. An operator's daemon also files the team's items.
    pub fn serve(&self, registry: &Registry) -> Serving {
        let mirror = Arc::new(Mirror {
            hub: self.clone(),
            registry: registry.clone(),
            offers: Arc::default(),
            early: Mutex::default(),
            overflowed: AtomicBool::new(false),
        });
        // Followed before the decider is set: no item is asked unseen; and
        // the ones waiting already (parked before a restart) posted again.
        let events = registry.subscribe();
        registry.decide_through(mirror.clone());
        for item in registry.pending() {
            if !item.mirrored {
                mirror.own_asked(item);
            }
        }
        let mut tasks = vec![tokio::spawn(publish_own(mirror.clone(), events))];
        // An operator's daemon follows the whole team; an agent host only
        // its own items' decisions, each while it waits (see `publish_own`):
        // an idle agent holds no consumer on the server, and an answer goes
        // to who asked, not to every agent connected.
        if self.options.role == Role::Operator {
            tasks.push(tokio::spawn(follow(
                mirror.clone(),
                Bucket::Decisions,
                ">".into(),
            )));
            tasks.push(tokio::spawn(follow(mirror, Bucket::Items, ">".into())));
        }
        Serving { tasks }
    }

    /// Puts this host's item on the hub.
    pub async fn post(&self, item: &Item, origin: Origin) -> Result<(), HubError> {
        let posted = Posted {
            v: VERSION,
            host: self.options.host.clone(),
            origin,
            item: item.clone(),
        };
        let bytes = serde_json::to_vec(&posted).map_err(HubError::Encode)?;
        self.items
            .put(
                Place::new(&self.options.host, item.id).item_key(),
                bytes.into(),
            )
            .await
            .map(|_| ())
            .map_err(|e| HubError::Publish(e.to_string()))
    }

    fn remote(&self, surface: &Surface) -> Remote {
        Remote {
            operator: self.options.operator.clone(),
            host: self.options.host.clone(),
            surface: Some(surface.name().to_owned()),
        }
    }
}

impl Mirror {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Who a decision read from the hub names: this host's own surface when
    /// the offer is still on its way, else the team's operator.
    fn decision(&self, decided: Decided) -> Decision {
        let ours = Self::lock(&self.offers).get(&decided.nonce).cloned();
        let mut decision = theirs(decided);
        decision.replied_by = ours.or(decision.replied_by);
        decision
    }

    /// Applies a decision read from the hub; keeps it when its item is not
    /// here yet. Kept under the lock [`Mirror::file`] files under, so a
    /// decision and its item read at once by the two followers meet.
    fn apply(&self, id: ItemId, decision: Decision) {
        let mut early = Self::lock(&self.early);
        if self.registry.apply(id, &decision)
            || self.registry.get(id).is_some()
            || self.hub.options.role == Role::Agent
            || self.settled_here(id)
        {
            return;
        }
        if early.len() == EARLY {
            early.pop_front();
            self.overflowed.store(true, Ordering::Relaxed);
        }
        early.push_back((id, decision));
    }

    /// Files other hosts' items, but those this daemon has already, in one
    /// write of its store.
    fn file(&self, posted: Vec<Posted>) {
        let items: Vec<Item> = posted
            .into_iter()
            .filter(|p| self.registry.get(p.item.id).is_none() && !self.settled_here(p.item.id))
            .map(|p| {
                let mut item = p.item;
                item.asker.host = Some(p.host);
                // This daemon cannot vouch for a process on another host.
                item.asker.confined = false;
                item.asker.pid = None;
                item
            })
            .collect();
        if items.is_empty() {
            return;
        }
        let early: Vec<(ItemId, Option<Decision>)> = {
            let mut early = Self::lock(&self.early);
            let filed = self.registry.open_mirrored(items);
            filed
                .into_iter()
                .map(|id| {
                    let decision = early
                        .iter()
                        .position(|(e, _)| *e == id)
                        .and_then(|at| early.remove(at));
                    (id, decision.map(|(_, d)| d))
                })
                .collect()
        };
        for (id, decision) in early {
            match decision {
                Some(decision) => {
                    self.registry.apply(id, &decision);
                }
                // Its decision may have come and gone unseen (more early
                // ones than are kept): ask. Otherwise the decisions'
                // follower brings it, and a burst of asks costs the hub no
                // read each.
                None if self.overflowed.load(Ordering::Relaxed) => {
                    let (hub, registry) = (self.hub.clone(), self.registry.clone());
                    let Some(place) = registry.get(id).map(|item| self.place(&item)) else {
                        continue;
                    };
                    tokio::spawn(async move {
                        if let Ok(Some(decided)) = hub.winner(&place).await {
                            registry.apply(id, &theirs(decided));
                        }
                    });
                }
                None => {}
            }
        }
    }

    /// Where `item` is on the hub: under its asking host, which a mirrored
    /// item names (see [`Mirror::file`]); this host's own under this host.
    fn place(&self, item: &Item) -> Place {
        match (&item.asker.host, item.mirrored) {
            (Some(host), true) => Place::new(host, item.id),
            _ => Place::new(&self.hub.options.host, item.id),
        }
    }

    /// This daemon's history has the item settled already.
    fn settled_here(&self, id: ItemId) -> bool {
        let Some(store) = self.registry.store() else {
            return false;
        };
        matches!(store.get(id), Ok(Some(record)) if record.outcome.is_some())
    }

    /// One of this host's items the hub has: if this daemon no longer holds
    /// it (it restarted meanwhile) and nobody settled it, it is withdrawn.
    async fn own(&self, posted: Posted) {
        let id = posted.item.id;
        let place = Place::new(&posted.host, id);
        if self.registry.get(id).is_some() || !matches!(self.hub.winner(&place).await, Ok(None)) {
            return;
        }
        let withdrawn = Decided {
            v: VERSION,
            outcome: hark_core::model::item::Outcome::Cancelled {
                reason: format!("hark restarted on {}", posted.host),
            },
            by: None,
            nonce: uuid::Uuid::new_v4().to_string(),
        };
        if let Err(e) = self.hub.decide(&place, Side::Asker, &withdrawn).await {
            tracing::warn!(question_id = %id, "could not withdraw an item left on the hub: {e}");
        }
    }
}

impl Decider for Mirror {
    fn decide(&self, item: Arc<Item>, offer: Offer) -> Deciding {
        let hub = self.hub.clone();
        let offers = self.offers.clone();
        let nonce = uuid::Uuid::new_v4().to_string();
        let side = match offer.replied_by {
            Some(_) => Side::Operator,
            None => Side::Asker,
        };
        let decided = Decided {
            v: VERSION,
            outcome: offer.outcome.clone(),
            by: offer.replied_by.as_ref().map(|s| hub.remote(s)),
            nonce: nonce.clone(),
        };
        // Known as this host's until the item settles here: the follower
        // may read the decision and settle the item first, between this
        // future's end and the registry's applying what it returned.
        let settled = offer.replied_by.as_ref().and_then(|surface| {
            let settled = self.registry.watch(item.id)?;
            Self::lock(&offers).insert(nonce.clone(), surface.clone());
            Some(settled)
        });
        let place = self.place(&item);
        Box::pin(async move {
            let result = hub.decide(&place, side, &decided).await;
            if let Some(settled) = settled {
                tokio::spawn(async move {
                    let _ = settled.await;
                    Self::lock(&offers).remove(&nonce);
                });
            }
            match result {
                Ok((_, true)) => Ok(Decision {
                    outcome: decided.outcome,
                    replied_by: offer.replied_by,
                    ours: true,
                }),
                Ok((winner, false)) => Ok(theirs(winner)),
                Err(e) => {
                    if side == Side::Asker {
                        tokio::spawn(file_later(hub, place, decided));
                    }
                    Err(Undecided(e.to_string()))
                }
            }
        })
    }
}

/// A decision another host made, as the registry applies it: the team's
/// operator who replied (none on the asker's side).
fn theirs(decided: Decided) -> Decision {
    Decision {
        replied_by: decided.by.map(Surface::Hub),
        outcome: decided.outcome,
        ours: false,
    }
}

/// Files the asker's side of an item the hub did not take (this host
/// settled it unanswered meanwhile), once the hub is back, so the team's
/// windows close too. An operator's answer that won in between came after
/// this host stopped waiting: it is reported, not delivered.
async fn file_later(hub: Hub, place: Place, decided: Decided) {
    let id = place.id;
    loop {
        hub.back(hub.connections(), AGAIN).await;
        match hub.decide(&place, Side::Asker, &decided).await {
            Ok((_, true)) => return,
            Ok((winner, false)) => {
                tracing::warn!(
                    question_id = %id,
                    outcome = winner.outcome.name(),
                    by = ?winner.by,
                    "the hub settled an item after this host had stopped waiting on it; its agent did not get that reply"
                );
                return;
            }
            Err(e) => tracing::debug!(question_id = %id, "the hub is still away: {e}"),
        }
    }
}

/// Which bucket a follower reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bucket {
    Items,
    Decisions,
}

/// Follows a bucket's keys matching `keys` from their current values on,
/// again after every break.
async fn follow(mirror: Arc<Mirror>, bucket: Bucket, keys: String) {
    loop {
        let seen = mirror.hub.connections();
        let store = match bucket {
            Bucket::Items => &mirror.hub.items,
            Bucket::Decisions => &mirror.hub.decisions,
        };
        // From each key's current value on: what was asked and settled
        // while this daemon was away, then what comes.
        let watch = read::watch(&mirror.hub.js, store, &keys, DeliverPolicy::LastPerSubject);
        match watch.await {
            // What has come while the last was handled is handled at once
            // (a burst of asks filed in one write of the store).
            Ok((_, watch)) => {
                let mut watch = watch.ready_chunks(BURST);
                // A watch goes on after an error (a heartbeat missed while
                // the server restarts): it ends only when it cannot.
                while let Some(entries) = watch.next().await {
                    let entries = entries
                        .into_iter()
                        .filter_map(|entry| {
                            entry
                                .inspect_err(|e| tracing::warn!(?bucket, "following the hub: {e}"))
                                .ok()
                        })
                        .filter(|entry| entry.operation == Operation::Put);
                    mirror.took(bucket, entries).await;
                }
            }
            Err(e) => tracing::warn!(?bucket, "cannot follow the hub: {e}"),
        }
        mirror.hub.back(seen, AGAIN).await;
    }
}

impl Mirror {
    /// Values put in a bucket, read at once.
    async fn took(&self, bucket: Bucket, entries: impl Iterator<Item = Entry>) {
        match bucket {
            Bucket::Decisions => {
                for entry in entries {
                    self.decided(entry).await;
                }
            }
            Bucket::Items => {
                let mut others = Vec::new();
                for entry in entries {
                    match posted(&entry) {
                        Some(posted) if posted.host == self.hub.options.host => {
                            self.own(posted).await;
                        }
                        Some(posted) => others.push(posted),
                        None => {}
                    }
                }
                self.file(others);
            }
        }
    }

    /// A put says the item is decided; which decision won is the earliest
    /// put, read from the hub (this one may be a later write a leader change
    /// let in, or the last of several).
    async fn decided(&self, entry: Entry) {
        let Some((place, _)) = Side::of_key(&entry.key) else {
            return;
        };
        let id = place.id;
        self.hub.saw_decision(id);
        if self.registry.get(id).is_none()
            && (self.hub.options.role == Role::Agent || self.settled_here(id))
        {
            return;
        }
        // Unreadable while the cluster elects a leader: tried again on
        // reconnecting, or after a patience that doubles.
        let mut patience = Duration::from_secs(1);
        loop {
            let seen = self.hub.connections();
            match self.hub.winner(&place).await {
                Ok(Some(decided)) => return self.apply(id, self.decision(decided)),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(question_id = %id, "cannot read the hub's decision: {e}");
                    self.hub.back(seen, patience).await;
                    patience = (patience * 2).min(AGAIN);
                }
            }
        }
    }
}

/// An item put on the hub, if hark can read it and it is under its own
/// host's key.
fn posted(entry: &Entry) -> Option<Posted> {
    let Ok(posted) = serde_json::from_slice::<Posted>(&entry.value) else {
        tracing::warn!(key = entry.key, "an item on the hub that hark cannot read");
        return None;
    };
    if Place::of_item_key(&entry.key) != Some(Place::new(&posted.host, posted.item.id)) {
        tracing::warn!(
            key = entry.key,
            host = posted.host,
            "an item on the hub under another's key (or another host's name)"
        );
        return None;
    }
    Some(posted)
}

/// Publishes this daemon's own items as they are asked (and again when
/// they park), and all of them again after falling behind.
async fn publish_own(mirror: Arc<Mirror>, mut events: tokio::sync::broadcast::Receiver<Event>) {
    loop {
        let items = match events.recv().await {
            Ok(Event::Added(item) | Event::Parked(item)) => vec![item],
            Ok(_) => continue,
            Err(RecvError::Lagged(_)) => mirror.registry.pending(),
            Err(RecvError::Closed) => return,
        };
        for item in items.into_iter().filter(|i| !i.mirrored) {
            mirror.own_asked(item);
        }
    }
}

impl Mirror {
    /// One of this host's items, asked (or parked): posted until the hub
    /// takes it; on an agent host, its decision followed until it settles
    /// here.
    fn own_asked(self: &Arc<Self>, item: Arc<Item>) {
        if self.hub.options.role == Role::Agent
            && let Some(settled) = self.registry.watch(item.id)
        {
            let keys = format!("{}.*", self.place(&item).item_key());
            let follow = follow(self.clone(), Bucket::Decisions, keys);
            tokio::spawn(async move {
                tokio::select! {
                    _ = settled => {}
                    () = follow => {}
                }
            });
        }
        tokio::spawn(post_until_taken(self.hub.clone(), item));
    }
}

/// Posts an item, again and again until the hub takes it.
async fn post_until_taken(hub: Hub, item: Arc<Item>) {
    let origin = match hub.options.role {
        Role::Operator => Origin::Daemon,
        Role::Agent => Origin::Agent,
    };
    loop {
        let seen = hub.connections();
        let Err(e) = hub.post(&item, origin).await else {
            return;
        };
        tracing::warn!(question_id = %item.id, "the hub did not take the item: {e}");
        hub.back(seen, AGAIN).await;
    }
}
