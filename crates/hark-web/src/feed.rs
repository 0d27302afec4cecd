//! The registry's events for the SSE stream: each numbered (a per-daemon
//! sequence, started at the daemon's start time in microseconds, so a
//! restarted daemon's numbers are past the last one's) and the latest
//! [`KEPT`] kept, so a client that reconnects with `Last-Event-ID` is sent
//! every event it missed. One whose id is older than what is kept, or not
//! this daemon's, is sent `resync` first: it lists the inbox again. So is a
//! new connection, once its stream is open: nothing falls between its
//! listing and its stream.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use hark_core::bridge::views::ItemView;
use hark_core::daemon::operator;
use hark_core::registry::{Event, Registry};
use hark_core::store::unix_ms;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

/// How many events are kept for reconnecting clients.
pub const KEPT: usize = 1024;

/// One event as it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub id: u64,
    /// `added`, `parked`, `settled`, `run_changed`, `store_health`,
    /// `devices`, `resync`.
    pub kind: &'static str,
    /// Its JSON.
    pub data: String,
}

#[derive(Debug)]
pub struct Feed {
    kept: Arc<Mutex<Kept>>,
    live: broadcast::Sender<Arc<Sent>>,
}

#[derive(Debug)]
struct Kept {
    /// The id the next event gets.
    next: u64,
    events: VecDeque<Arc<Sent>>,
}

impl Kept {
    fn push(&mut self, kind: &'static str, data: String) -> Arc<Sent> {
        let sent = Arc::new(Sent {
            id: self.next,
            kind,
            data,
        });
        self.next += 1;
        if self.events.len() == KEPT {
            self.events.pop_front();
        }
        self.events.push_back(sent.clone());
        sent
    }

    /// The latest id given out (what a `resync` carries).
    fn latest(&self) -> u64 {
        self.next - 1
    }
}

/// What a client joining the stream is sent first, and what it follows.
#[derive(Debug)]
pub struct Joined {
    /// The events it missed, or a `resync` alone.
    pub first: Vec<Arc<Sent>>,
    pub live: broadcast::Receiver<Arc<Sent>>,
}

impl Feed {
    /// Follows `registry` from now on, in a task of its own.
    pub fn start(registry: &Registry) -> Feed {
        let first = unix_ms(std::time::SystemTime::now()).saturating_mul(1000);
        let kept = Arc::new(Mutex::new(Kept {
            next: first.max(1),
            events: VecDeque::new(),
        }));
        let live = broadcast::channel(KEPT).0;
        let feed = Feed {
            kept: kept.clone(),
            live: live.clone(),
        };
        let mut events = registry.subscribe();
        let registry = registry.clone();
        tokio::spawn(async move {
            loop {
                let (kind, data) = match events.recv().await {
                    Ok(event) => describe(&registry, event),
                    // Events were lost: every client lists again.
                    Err(RecvError::Lagged(_)) => ("resync", "{}".to_owned()),
                    Err(RecvError::Closed) => return,
                };
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                let sent = kept.push(kind, data);
                // Sent under the lock: a joining client sees each event
                // either among the kept ones or live, in order.
                let _ = live.send(sent);
            }
        });
        feed
    }

    /// A client joins, having seen every event up to `last_seen` (its
    /// `Last-Event-ID`), or none.
    pub fn join(&self, last_seen: Option<u64>) -> Joined {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let live = self.live.subscribe();
        let oldest = kept.events.front().map_or(kept.next, |e| e.id);
        let first = match last_seen {
            // It has seen up to now, or missed only what is kept.
            Some(seen) if seen < kept.next && seen.saturating_add(1) >= oldest => kept
                .events
                .iter()
                .filter(|e| e.id > seen)
                .cloned()
                .collect(),
            _ => vec![self.resync(&kept)],
        };
        Joined { first, live }
    }

    fn resync(&self, kept: &Kept) -> Arc<Sent> {
        Arc::new(Sent {
            id: kept.latest(),
            kind: "resync",
            data: "{}".to_owned(),
        })
    }

    /// A `resync` at the latest id, for a client that fell behind.
    pub fn resync_now(&self) -> Arc<Sent> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        self.resync(&kept)
    }
}

/// An event's kind and JSON.
fn describe(registry: &Registry, event: Event) -> (&'static str, String) {
    let json = |v: &ItemView| serde_json::to_string(v).unwrap_or_else(|_| "{}".to_owned());
    match event {
        Event::Added(item) => ("added", json(&ItemView::pending(&item))),
        Event::Parked(item) => ("parked", json(&ItemView::pending(&item))),
        Event::Settled {
            item,
            outcome,
            replied_by,
            at,
        } => (
            "settled",
            json(&operator::settled(registry, &item, outcome, replied_by, at)),
        ),
        Event::RunChanged => ("run_changed", "{}".to_owned()),
        Event::StoreHealth(health) => (
            "store_health",
            serde_json::to_string(&health).unwrap_or_else(|_| "{}".to_owned()),
        ),
        Event::DevicesChanged => ("devices", "{}".to_owned()),
    }
}
