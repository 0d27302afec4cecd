//! Recording items and outcomes in the store, and what happens when it
//! refuses a write.
//!
//! Every item is written when it opens and again when it settles. A write
//! the store refuses (its disk is full, its file turned read-only) loses
//! nothing: the registry still holds the item, so it is listed, answered and
//! delivered to its agent as ever, and the write waits in the backlog, in
//! the order it was made. While the backlog is not empty the store's health
//! is failing, and every surface says so. The backlog is tried again before
//! each later write, on each health query and every [`RETRY`]; once the store
//! takes all of it, the items and outcomes are recorded with their own times
//! and the health clears. A write that failed rolled back alone: rows
//! already stored are untouched. What is still in the backlog when hark
//! stops is lost, and the log says which items.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{Event, Registry, Shared};
use crate::model::ids::ItemId;
use crate::model::item::{Item, ItemFilter, Outcome, Surface};
use crate::store::{Record, Store, StoreError, Writes, unix_ms};

/// How often a failing store is tried again when nothing else writes.
pub const RETRY: Duration = Duration::from_secs(5);

/// How the store is doing, as operator surfaces show it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreHealth {
    /// The store file.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    /// Why its writes fail; `None` while it takes them.
    pub error: Option<String>,
    /// Since when (unix ms) its writes fail.
    pub failing_since_ms: Option<u64>,
    /// Items and outcomes held in memory only, until the store takes them.
    pub unrecorded: usize,
}

impl StoreHealth {
    pub fn is_failing(&self) -> bool {
        self.error.is_some()
    }
}

/// The writes the store refused, oldest first.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    writes: VecDeque<Write>,
    /// Set while `writes` is not empty: the last error and when it began.
    failing: Option<(String, SystemTime)>,
}

/// One write of the registry's to the store.
#[derive(Debug)]
pub(super) enum Write {
    Insert(Arc<Item>),
    /// The item parked (`item.parked_at()` says when).
    Park(Arc<Item>),
    Settle {
        item: Arc<Item>,
        outcome: Outcome,
        replied_by: Option<Surface>,
        at: SystemTime,
    },
}

impl Write {
    fn apply(&self, store: &Writes<'_>) -> Result<(), StoreError> {
        match self {
            Write::Insert(item) => match store.insert(item) {
                // Already there: nothing is missing.
                Err(StoreError::Sqlite {
                    source: rusqlite::Error::SqliteFailure(e, _),
                    ..
                }) if e.code == rusqlite::ErrorCode::ConstraintViolation => Ok(()),
                other => other,
            },
            Write::Park(item) => match item.parked_at() {
                Some(at) => store.park(item.id, at).map(|_| ()),
                None => Ok(()),
            },
            Write::Settle {
                item,
                outcome,
                replied_by,
                at,
            } => store
                .settle_at(item.id, outcome, replied_by.as_ref(), *at)
                .map(|_| ()),
        }
    }

    fn item(&self) -> &Item {
        match self {
            Write::Insert(item) | Write::Park(item) | Write::Settle { item, .. } => item,
        }
    }
}

/// Why a write failed, without the store's path (the health names it).
fn reason(e: &StoreError) -> String {
    match e {
        StoreError::Sqlite { source, .. } | StoreError::Unwritable { source, .. } => {
            source.to_string()
        }
        other => other.to_string(),
    }
}

impl Backlog {
    /// Writes what waits, oldest first, until the store refuses one: all
    /// of it in one transaction, or (when the store refuses that) one by
    /// one, so what it takes is kept and the first it refuses is known.
    fn flush(&mut self, store: &Store, now: SystemTime) {
        if self.writes.len() > 1
            && store
                .together(|w| self.writes.iter().try_for_each(|write| write.apply(w)))
                .is_ok()
        {
            self.writes.clear();
        }
        while let Some(write) = self.writes.front() {
            if let Err(e) = store.together(|w| write.apply(w)) {
                let since = self.failing.as_ref().map_or(now, |(_, since)| *since);
                self.failing = Some((reason(&e), since));
                return;
            }
            self.writes.pop_front();
        }
        self.failing = None;
    }

    fn health(&self, store: &Store) -> StoreHealth {
        StoreHealth {
            path: store.path().to_owned(),
            error: self.failing.as_ref().map(|(e, _)| e.clone()),
            failing_since_ms: self.failing.as_ref().map(|(_, since)| unix_ms(*since)),
            unrecorded: self.writes.len(),
        }
    }

    /// The items the store lacks, as records (settled when their outcome
    /// waits too), and the outcomes it lacks of items it has.
    fn records(&self) -> (Vec<Record>, HashMap<ItemId, Record>) {
        let mut unstored: Vec<Record> = Vec::new();
        let mut late = HashMap::new();
        for write in &self.writes {
            match write {
                Write::Insert(item) => unstored.push(Record::from(&**item)),
                Write::Park(item) => {
                    if let Some(r) = unstored.iter_mut().find(|r| r.id == item.id) {
                        r.parking = item.parking.clone();
                    }
                }
                Write::Settle {
                    item,
                    outcome,
                    replied_by,
                    at,
                } => {
                    let mut settled = Record::from(&**item);
                    settled.outcome = Some(outcome.clone());
                    settled.replied_by = replied_by.as_ref().map(|s| s.name().to_owned());
                    settled.replied_device = replied_by
                        .as_ref()
                        .and_then(|s| s.device())
                        .map(|d| (d, None));
                    settled.replied_remote = replied_by.as_ref().and_then(|s| s.remote()).cloned();
                    settled.settled_ms = Some(unix_ms(*at));
                    match unstored.iter_mut().find(|r| r.id == item.id) {
                        Some(r) => *r = settled,
                        None => {
                            late.insert(item.id, settled);
                        }
                    }
                }
            }
        }
        (unstored, late)
    }
}

/// Whether `filter` selects `r`.
fn selects(filter: &ItemFilter, r: &Record) -> bool {
    filter.pending.is_none_or(|p| p == r.outcome.is_none())
        && filter
            .outcome
            .as_ref()
            .is_none_or(|o| r.outcome.as_ref().is_some_and(|x| x.name() == o))
        && filter
            .session_id
            .as_ref()
            .is_none_or(|s| *s == r.session_id)
        && filter.id.is_none_or(|id| id == r.id)
}

impl Registry {
    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.shared
            .backlog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `write` to the store, after whatever waits before it; keeps it
    /// in the backlog when the store refuses.
    pub(super) fn record(&self, write: Write) {
        self.record_all(vec![write]);
    }

    /// [`Registry::record`] for several writes, made in one transaction.
    pub(super) fn record_all(&self, writes: Vec<Write>) {
        let Some(store) = &self.shared.store else {
            return;
        };
        let mut backlog = self.backlog();
        let was_failing = backlog.failing.is_some();
        let added = writes.len();
        backlog.writes.extend(writes);
        backlog.flush(store, self.shared.clock.now());
        if let Some((e, _)) = &backlog.failing {
            let held = backlog.writes.len();
            for write in backlog.writes.range(held.saturating_sub(added)..) {
                tracing::error!(
                    question_id = %write.item().id,
                    store = %store.path().display(),
                    "not recorded yet, held in memory until the store takes writes: {e}"
                );
            }
        }
        self.health_changed(was_failing, &backlog, store);
    }

    /// Tries the backlog again.
    fn retry(&self) {
        let Some(store) = &self.shared.store else {
            return;
        };
        let mut backlog = self.backlog();
        if backlog.writes.is_empty() {
            return;
        }
        backlog.flush(store, self.shared.clock.now());
        self.health_changed(true, &backlog, store);
    }

    /// Logs and tells followers when the store began or stopped failing.
    fn health_changed(&self, was_failing: bool, backlog: &Backlog, store: &Store) {
        let health = backlog.health(store);
        match (was_failing, health.is_failing()) {
            (false, true) => {
                tracing::error!(
                    store = %store.path().display(),
                    "the store cannot be written: {}; items are held in memory until it can",
                    health.error.as_deref().unwrap_or_default()
                );
                self.shared.retry.notify_one();
            }
            (true, false) => {
                tracing::info!(store = %store.path().display(), "the store takes writes again; every held item and outcome is recorded");
            }
            _ => return,
        }
        let _ = self.shared.events.send(Event::StoreHealth(health));
    }

    /// How the store is doing (`None` without one), after trying again
    /// what it refused.
    pub fn store_health(&self) -> Option<StoreHealth> {
        self.retry();
        let store = self.shared.store.as_ref()?;
        Some(self.backlog().health(store))
    }

    /// Lists records from `store` as [`Store::list_as`] does, with what it
    /// has not recorded yet: items it lacks come first (pending, then
    /// settled, newest first), and an outcome it lacks replaces its row's.
    pub fn list_as<T>(
        &self,
        store: &Store,
        filter: &ItemFilter,
        mut into: impl FnMut(Record) -> T,
    ) -> Result<Vec<T>, StoreError> {
        // Held across the listing, so nothing is both held and stored.
        let backlog = self.backlog();
        let (mut unstored, mut late) = backlog.records();
        unstored.retain(|r| selects(filter, r));
        unstored.sort_by_key(|r| (r.outcome.is_some(), std::cmp::Reverse(r.created_ms)));
        let offset = filter.offset.unwrap_or(0) as usize;
        let limit = filter.limit.unwrap_or(u32::MAX) as usize;
        let held = unstored.len();
        let mut rows: Vec<T> = unstored
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(&mut into)
            .collect();
        let wanted = limit - rows.len();
        if wanted == 0 {
            return Ok(rows);
        }
        let stored = ItemFilter {
            offset: Some(offset.saturating_sub(held) as u32),
            limit: Some(u32::try_from(wanted).unwrap_or(u32::MAX)),
            ..filter.clone()
        };
        rows.extend(store.list_as(&stored, |r| into(late.remove(&r.id).unwrap_or(r)))?);
        Ok(rows)
    }

    /// One last try at the backlog as hark stops; says what is lost.
    pub(super) fn flush_on_shutdown(&self) {
        self.retry();
        let backlog = self.backlog();
        if backlog.writes.is_empty() {
            return;
        }
        let ids: Vec<String> = backlog
            .writes
            .iter()
            .map(|w| w.item().id.to_string())
            .collect();
        tracing::error!(
            items = ?ids,
            "hark stops with {} item write(s) the store never took; they are lost",
            ids.len()
        );
    }
}

/// Tries a failing store again every [`RETRY`] until it takes the backlog.
pub(super) async fn retry_backlog(shared: Arc<Shared>) {
    let registry = Registry { shared };
    loop {
        registry.shared.retry.notified().await;
        while !registry.is_shut_down() && !registry.backlog().writes.is_empty() {
            tokio::time::sleep(RETRY).await;
            registry.retry();
        }
        if registry.is_shut_down() {
            return;
        }
    }
}
