//! Parking: an item whose agent can be paused and resumed (see
//! [`Parking`](crate::model::item::Parking)) does not time out at the end
//! of its bounded wait. It parks: its asker is told so (the agent exits,
//! saved), the item waits with no timeout, and when the operator settles
//! it, the resumed agent's call of the same tool use gets the outcome.
//! Parked items survive restarts: the store keeps them pending and
//! [`Registry::restore_parked`] brings them back.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::recording::Write;
use super::{Entry, Event, Registry};
use crate::model::ids::{ItemId, SessionId};
use crate::model::item::{Item, Outcome, Parking, SubAgent};
use crate::store::StoreError;
use crate::trace;

/// How many settled outcomes of items that park are kept in memory.
const REMEMBERED: usize = 1024;

/// Keeps the outcome of a settled item that parks, for its resumed calls.
pub(super) fn remember(
    state: &mut super::State,
    item: &Item,
    tool_use_id: &str,
    outcome: &Outcome,
) {
    if state.settled_parking.len() == REMEMBERED {
        state.settled_parking.pop_front();
    }
    state.settled_parking.push_back((
        tool_use_id.to_owned(),
        item.session_id.clone(),
        item.id,
        outcome.clone(),
    ));
}

/// How many announced sub-agent calls are kept until they ask.
const SUB_AGENT_CALLS: usize = 256;

impl Registry {
    /// Notes that a sub-agent makes the tool call `tool_use_id` in
    /// `session`: the item that call asks is filed under it.
    pub fn note_sub_agent(&self, tool_use_id: &str, session: &SessionId, sub_agent: SubAgent) {
        let mut state = self.lock();
        if state.sub_agents.len() == SUB_AGENT_CALLS {
            state.sub_agents.pop_front();
        }
        state
            .sub_agents
            .push_back((tool_use_id.to_owned(), session.clone(), sub_agent));
    }

    /// The sub-agent that makes the call `tool_use_id` in `session`, if
    /// its host announced one (once).
    pub fn take_sub_agent(&self, tool_use_id: &str, session: &SessionId) -> Option<SubAgent> {
        let mut state = self.lock();
        let at = state
            .sub_agents
            .iter()
            .rposition(|(id, in_session, _)| id == tool_use_id && in_session == session)?;
        state
            .sub_agents
            .remove(at)
            .map(|(_, _, sub_agent)| sub_agent)
    }
}

/// What the asker of an item hears.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    Settled(Outcome),
    /// It parked; it waits on with no asker, and settles later.
    Parked,
}

/// The item a tool use asked, as found again.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Still waiting (parked, or in its bounded wait).
    Pending(Arc<Item>),
    /// Settled with this outcome.
    Settled { id: ItemId, outcome: Outcome },
}

impl Registry {
    /// Parks a pending item that parks (its deadline passed, or its asker
    /// went away mid-wait): its asker is told, its deadline is dropped, and
    /// the store records it. `None` when the item is not pending or does
    /// not park.
    pub fn park(&self, id: ItemId) -> Option<Arc<Item>> {
        let parked = {
            let mut state = self.lock();
            let entry = state.pending.get_mut(&id)?;
            let parking = entry.item.parking.clone()?;
            if parking.parked_at.is_some() {
                return Some(entry.item.clone());
            }
            let item = Arc::new(Item {
                parking: Some(Parking {
                    parked_at: Some(self.shared.clock.now()),
                    ..parking
                }),
                ..(*entry.item).clone()
            });
            entry.item = item.clone();
            let asker = entry.settle.take();
            let deadline = entry.deadline.take();
            if let Some(deadline) = deadline {
                state.expirations.remove(&(deadline, id));
            }
            if let Some(asker) = asker {
                let _ = asker.send(Waited::Parked);
            }
            item
        };
        self.record(Write::Park(parked.clone()));
        trace::parked(&parked);
        let _ = self.shared.events.send(Event::Parked(parked.clone()));
        Some(parked)
    }

    /// Waits for a pending item's outcome beside its asker; `None` when it
    /// is not pending.
    pub fn watch(&self, id: ItemId) -> Option<oneshot::Receiver<Outcome>> {
        let (tx, rx) = oneshot::channel();
        self.lock().pending.get_mut(&id)?.watchers.push(tx);
        Some(rx)
    }

    /// The item the tool use `tool_use_id` asked in `session`: pending
    /// here, settled lately (kept in memory, so a failing store loses
    /// nothing), or settled in the store. Only items that park are found
    /// this way, and only by a caller of the same session.
    pub fn by_tool_use(
        &self,
        tool_use_id: &str,
        session: &SessionId,
    ) -> Result<Option<Found>, StoreError> {
        let pending = self
            .lock()
            .pending
            .values()
            .find(|e| {
                e.item.session_id == *session
                    && e.item
                        .parking
                        .as_ref()
                        .is_some_and(|p| p.tool_use_id == tool_use_id)
            })
            .map(|e| e.item.clone());
        if let Some(item) = pending {
            return Ok(Some(Found::Pending(item)));
        }
        let recent = self
            .lock()
            .settled_parking
            .iter()
            .rev()
            .find(|(id, in_session, _, _)| id == tool_use_id && in_session == session)
            .map(|(_, _, id, outcome)| Found::Settled {
                id: *id,
                outcome: outcome.clone(),
            });
        if recent.is_some() {
            return Ok(recent);
        }
        let Some(store) = self.store() else {
            return Ok(None);
        };
        Ok(store.by_tool_use(tool_use_id, session)?.and_then(|record| {
            let id = record.id;
            record.outcome.map(|outcome| Found::Settled { id, outcome })
        }))
    }

    /// Brings back the items the store holds parked (after a restart): they
    /// wait for the operator as before, with no asker and no timeout.
    /// Returns how many.
    pub fn restore_parked(&self) -> Result<usize, StoreError> {
        let Some(store) = self.store() else {
            return Ok(0);
        };
        let parked = store.parked()?;
        let count = parked.len();
        let mut state = self.lock();
        for record in parked {
            let item = Arc::new(record.into_item());
            state.pending.entry(item.id).or_insert(Entry {
                item,
                opened: Instant::now(),
                deadline: None,
                settle: None,
                watchers: Vec::new(),
            });
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::ids::Clock;
    use crate::model::item::Surface;
    use crate::model::resolve::{Pick, Picks};
    use crate::registry::Reply;
    use crate::store::Store;

    /// An item asked by tool use `toolu_1`, which parks after `wait`.
    fn parking(wait: Duration) -> Item {
        Item {
            parking: Some(Parking {
                tool_use_id: "toolu_1".into(),
                parked_at: None,
                transcript: Some("/saved/s1.jsonl".into()),
            }),
            ..crate::registry::tests::item(wait)
        }
    }

    fn yes() -> Reply {
        let question = "Go?".to_owned();
        Reply::Answer(Picks::from([(question, Pick::Label("Yes (Recommended)".into()))]).into())
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_that_parks_parks_at_its_deadline_and_waits_without_one() {
        let registry = Registry::new();
        let mut events = registry.subscribe();
        let mut pending = registry.open(parking(Duration::from_secs(5)));
        let id = pending.item.id;
        assert_eq!(pending.wait().await, Waited::Parked);
        let parked = registry.get(id).expect("still pending");
        assert!(parked.parked_at().is_some());
        assert!(matches!(events.recv().await, Ok(Event::Added(_))));
        assert!(matches!(events.recv().await, Ok(Event::Parked(i)) if i.id == id));
        // No timeout: a day later it still waits, and dropping its asker
        // does not cancel it.
        drop(pending);
        tokio::time::advance(Duration::from_secs(24 * 3600)).await;
        assert!(registry.get(id).is_some());
        let watched = registry.watch(id).unwrap();
        let answered = registry.reply(id, yes(), Surface::Cli).await.unwrap();
        assert_eq!(watched.await.unwrap(), answered);
        assert!(matches!(answered, Outcome::Answered(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_settled_item_that_parks_is_found_without_a_store() {
        let registry = Registry::new();
        let mut pending = registry.open(parking(Duration::from_secs(5)));
        let id = pending.item.id;
        let answered = registry.reply(id, yes(), Surface::Cli).await.unwrap();
        assert_eq!(pending.wait().await, Waited::Settled(answered.clone()));
        assert_eq!(
            registry.by_tool_use("toolu_1", &"s1".into()).unwrap(),
            Some(Found::Settled {
                id,
                outcome: answered
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_that_does_not_park_still_times_out() {
        let registry = Registry::new();
        let mut pending = registry.open(crate::registry::tests::item(Duration::from_secs(5)));
        assert_eq!(
            pending.wait().await,
            Waited::Settled(Outcome::TimedOut { after_ms: 5_000 })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_item_survives_a_restart_and_its_tool_use_finds_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hark.db");
        let id = {
            let store = Arc::new(Store::open(&path, Clock::system()).unwrap());
            let registry = Registry::with_store(Some(store));
            let mut pending = registry.open(parking(Duration::from_secs(5)));
            assert_eq!(pending.wait().await, Waited::Parked);
            registry.shutdown("hark is stopping");
            pending.item.id
        };
        // A pending item that does not park is closed out by the restart; the
        // parked one is not.
        let store = Arc::new(Store::open(&path, Clock::system()).unwrap());
        let registry = Registry::with_store(Some(store));
        assert_eq!(registry.restore_parked().unwrap(), 1);
        let restored = registry.get(id).expect("the parked item is back");
        assert!(restored.parked_at().is_some());
        let transcript = restored.parking.as_ref().unwrap().transcript.as_deref();
        assert_eq!(transcript, Some(std::path::Path::new("/saved/s1.jsonl")));
        assert!(matches!(
            registry.by_tool_use("toolu_1", &"s1".into()).unwrap(),
            Some(Found::Pending(item)) if item.id == id
        ));
        let answered = registry.reply(id, yes(), Surface::Cli).await.unwrap();
        assert_eq!(
            registry.by_tool_use("toolu_1", &"s1".into()).unwrap(),
            Some(Found::Settled {
                id,
                outcome: answered
            })
        );
        assert_eq!(registry.by_tool_use("toolu_2", &"s1".into()).unwrap(), None);
    }
}
