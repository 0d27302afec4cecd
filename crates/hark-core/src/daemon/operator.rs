//! The operator's side of the bridge socket: reply to an item, list items,
//! follow the inbox, clear the history. Every surface (desktop, terminal,
//! CLI) goes through these, so one set of reply rules holds everywhere.

use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::broadcast::error::RecvError;

use crate::bridge::views::{ItemView, RunView, SessionView, views};
use crate::bridge::wire::{
    ClientFrame, ErrorCode, FeedEvent, ServerFrame, WireError, WireReply, read_frame, write_frame,
};
use crate::model::ids::ItemId;
use crate::model::item::{ItemFilter, Surface};
use crate::registry::{Event, Registry};
use crate::store::{Store, StoreError};

/// Applies an operator's reply; the registry's rules decide.
pub fn reply(registry: &Registry, id: ItemId, reply: WireReply, surface: Surface) -> ServerFrame {
    match registry.reply(id, reply.into(), surface) {
        Ok(outcome) => ServerFrame::Replied { id, outcome },
        Err(e) => ServerFrame::Error(e.into()),
    }
}

/// Lists items from the store, or the pending ones when there is no store.
pub fn list(registry: &Registry, filter: &ItemFilter) -> ServerFrame {
    match items(registry, filter) {
        Ok(items) => ServerFrame::Items { items },
        Err(e) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
    }
}

/// The items `filter` selects: from the store, or (without one) the pending
/// items the registry holds.
pub fn items(registry: &Registry, filter: &ItemFilter) -> Result<Vec<ItemView>, StoreError> {
    if let Some(store) = registry.store() {
        return registry.list_as(store, filter, ItemView::from);
    }
    Ok(registry
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
        .map(|i| ItemView::pending(i))
        .collect())
}

/// How much of the history, the runs and the sessions an inbox shows.
#[derive(Debug, Clone, Copy)]
pub struct InboxLimits {
    pub history: u32,
    pub runs: u32,
    pub sessions: u32,
}

/// The inbox as a window draws it: what waits (live, from the registry),
/// then the settled history the operator has not dismissed, the runs and
/// the sessions (from the store).
#[derive(Debug, Clone, Default)]
pub struct Inbox {
    /// Oldest first.
    pub pending: Vec<ItemView>,
    /// Newest first.
    pub history: Vec<ItemView>,
    pub runs: Vec<RunView>,
    pub sessions: Vec<SessionView>,
}

/// The inbox; with no `limits`, what waits only.
pub fn inbox(registry: &Registry, limits: Option<InboxLimits>) -> Result<Inbox, StoreError> {
    let pending = registry
        .pending()
        .iter()
        .map(|i| ItemView::pending(i))
        .collect();
    let (Some(store), Some(limits)) = (registry.store(), limits) else {
        return Ok(Inbox {
            pending,
            ..Inbox::default()
        });
    };
    let settled = ItemFilter {
        pending: Some(false),
        limit: Some(limits.history),
        ..ItemFilter::default()
    };
    Ok(Inbox {
        pending,
        history: {
            let mut history = registry.list_as(store, &settled, ItemView::from)?;
            history.retain(|item| !item.dismissed);
            history
        },
        runs: views(store.runs(limits.runs)?),
        sessions: views(store.sessions(limits.sessions)?),
    })
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
        |runs| ServerFrame::Runs { runs: views(runs) },
    )
}

/// The sessions that asked, those waiting first (100 unless limited).
pub fn sessions(registry: &Registry, limit: Option<u32>) -> ServerFrame {
    from_store(
        registry,
        |store| store.sessions(limit.unwrap_or(100)),
        |sessions| ServerFrame::Sessions {
            sessions: views(sessions),
        },
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
            item: Box::new(ItemView::pending(&item)),
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
                Ok(Event::RunChanged | Event::StoreHealth(_)) => continue,
                Ok(Event::Added(item)) => ServerFrame::Event { event: FeedEvent::Added, item: Box::new(ItemView::pending(&item)) },
                Ok(Event::Settled { item, outcome, replied_by, at }) => ServerFrame::Event {
                    event: FeedEvent::Settled,
                    item: Box::new(ItemView::settled(&item, outcome, replied_by, at)),
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
