//! The operator's side of the bridge socket: reply to an item, list items,
//! follow the inbox, clear the history. Every surface (desktop, terminal,
//! CLI) goes through these, so one set of reply rules holds everywhere.

use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::broadcast::error::RecvError;

use crate::bridge::wire::{
    ClientFrame, ErrorCode, FeedEvent, ServerFrame, WireError, WireReply, read_frame, write_frame,
};
use crate::model::item::{ItemId, Surface};
use crate::registry::{Event, Registry};
use crate::store::{Filter, Record, Store, StoreError};

/// Applies an operator's reply; the registry's rules decide.
pub fn reply(registry: &Registry, id: ItemId, reply: WireReply, surface: Surface) -> ServerFrame {
    match registry.reply(id, reply.into(), surface) {
        Ok(outcome) => ServerFrame::Replied { id, outcome },
        Err(e) => ServerFrame::Error(e.into()),
    }
}

/// Lists items from the store, or the pending ones when there is no store.
pub fn list(registry: &Registry, filter: &Filter) -> ServerFrame {
    match registry.store() {
        Some(store) => match store.list(filter) {
            Ok(items) => ServerFrame::Items { items },
            Err(e) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
        },
        None => {
            let items = registry
                .pending()
                .iter()
                .filter(|i| filter.id.is_none_or(|id| id == i.id))
                .filter(|i| {
                    filter
                        .session_id
                        .as_ref()
                        .is_none_or(|s| *s == i.session_id)
                })
                .filter(|_| filter.pending != Some(false) && filter.outcome.is_none())
                .skip(filter.offset.unwrap_or(0) as usize)
                .take(filter.limit.unwrap_or(u32::MAX) as usize)
                .map(|i| Record::new(i, None, None))
                .collect();
            ServerFrame::Items { items }
        }
    }
}

/// Records a run's start or end.
pub fn record_run(registry: &Registry, frame: ClientFrame) -> ServerFrame {
    let Some(store) = registry.store() else {
        return ServerFrame::Error(WireError::new(ErrorCode::Unavailable, "there is no store"));
    };
    let recorded = match frame {
        ClientFrame::RunStarted { run } => store.run_started(&run),
        ClientFrame::RunFinished {
            run_id,
            exit_code,
            result,
            cost_usd,
        } => store
            .run_finished(&run_id, exit_code, result.as_deref(), cost_usd)
            .map(|_| ()),
        _ => return ServerFrame::Error(WireError::new(ErrorCode::BadFrame, "not a run frame")),
    };
    match recorded {
        Ok(()) => {
            registry.run_changed();
            ServerFrame::Recorded
        }
        Err(e) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
    }
}

/// The runs, newest first (the last 100 unless `limit` says otherwise).
pub fn runs(registry: &Registry, limit: Option<u32>) -> ServerFrame {
    from_store(
        registry,
        |store| store.runs(limit.unwrap_or(100)),
        |runs| ServerFrame::Runs { runs },
    )
}

/// The sessions that asked, those waiting first (100 unless limited).
pub fn sessions(registry: &Registry, limit: Option<u32>) -> ServerFrame {
    from_store(
        registry,
        |store| store.sessions(limit.unwrap_or(100)),
        |sessions| ServerFrame::Sessions { sessions },
    )
}

/// A listing from the store as a frame; an empty one without a store.
fn from_store<T>(
    registry: &Registry,
    list: impl FnOnce(&Store) -> Result<Vec<T>, StoreError>,
    frame: impl FnOnce(Vec<T>) -> ServerFrame,
) -> ServerFrame {
    match registry.store().map(|store| list(store)) {
        Some(Ok(rows)) => frame(rows),
        Some(Err(e)) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
        None => frame(Vec::new()),
    }
}

/// Deletes the settled history.
pub fn clear_settled(registry: &Registry) -> ServerFrame {
    match registry.store().map(|s| s.prune_settled(0)) {
        Some(Ok(removed)) => ServerFrame::Cleared { removed },
        Some(Err(e)) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
        None => ServerFrame::Cleared { removed: 0 },
    }
}

/// Streams the inbox to a follower: every pending item, then each add and
/// settle, until the follower hangs up. It subscribes before it lists, so no
/// change falls between the two (an item may come twice; ids tell).
pub async fn follow(
    registry: &Registry,
    mut reader: BufReader<OwnedReadHalf>,
    mut writer: OwnedWriteHalf,
) {
    let mut events = registry.subscribe();
    for item in registry.pending() {
        let frame = ServerFrame::Event {
            event: FeedEvent::Added,
            item: Box::new(Record::new(&item, None, None)),
        };
        if write_frame(&mut writer, &frame).await.is_err() {
            return;
        }
    }
    let mut buf = Vec::new();
    loop {
        let frame = tokio::select! {
            event = events.recv() => match event {
                // The terminal feed follows items; runs are listed with `hark runs`.
                Ok(Event::RunChanged) => continue,
                Ok(Event::Added(item)) => ServerFrame::Event { event: FeedEvent::Added, item: Box::new(Record::new(&item, None, None)) },
                Ok(Event::Settled { item, outcome, replied_by }) => ServerFrame::Event {
                    event: FeedEvent::Settled,
                    item: Box::new(Record::new(&item, Some(outcome), replied_by)),
                },
                Err(RecvError::Lagged(missed)) => ServerFrame::Error(WireError::new(
                    ErrorCode::Unavailable,
                    format!("the follower fell {missed} events behind; list again and resubscribe"),
                )),
                Err(RecvError::Closed) => return,
            },
            // Anything from the follower but a frame ends the feed.
            read = read_frame(&mut reader, &mut buf) => match read {
                Ok(true) => continue,
                _ => return,
            },
        };
        let lagged = matches!(frame, ServerFrame::Error(_));
        if write_frame(&mut writer, &frame).await.is_err() || lagged {
            return;
        }
    }
}
