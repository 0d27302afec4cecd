//! The operator's side of the bridge socket: reply to an item, list items,
//! follow the inbox, clear the history. Every surface (desktop, terminal,
//! CLI) goes through these, so one set of reply rules holds everywhere.

use crate::platform::WriteHalf;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use crate::bridge::deadline::SocketReader;
use crate::bridge::views::{
    DeviceRef, DeviceView, InboxView, ItemView, RunView, SessionView, views,
};
use crate::bridge::wire::{
    ClientFrame, ErrorCode, FeedEvent, MAX_FRAME, ServerFrame, WireError, WireReply, read_frame,
    write_frame,
};
use crate::model::ids::{DeviceId, ItemId};
use crate::model::item::{Item, ItemFilter, Outcome, Surface};
use crate::registry::{Event, Registry, StoreHealth};
use crate::store::{StoreError, unix_ms};
use crate::text::{json_len, size};

/// Applies an operator's reply; the registry's rules decide.
pub async fn reply(
    registry: &Registry,
    id: ItemId,
    reply: WireReply,
    surface: Surface,
) -> ServerFrame {
    match registry.reply(id, reply.into(), surface).await {
        Ok(outcome) => ServerFrame::Replied { id, outcome },
        Err(e) => ServerFrame::Error(e.into()),
    }
}

/// What the entries of one listing page may weigh together: the frame's
/// cap less room for the frame around them.
pub const PAGE_BUDGET: usize = MAX_FRAME - 4096;

/// Rows read for one page at most (a page may keep fewer).
const PAGE_ROWS: u32 = 100;

/// One page of items from `filter.offset`, each clipped for the listing,
/// as many as fit in a frame; from the store, or the pending ones when
/// there is no store.
pub fn list(registry: &Registry, filter: &ItemFilter) -> ServerFrame {
    let window = Window::new(filter.offset, filter.limit);
    let page = ItemFilter {
        offset: Some(window.offset),
        limit: Some(window.rows),
        ..filter.clone()
    };
    let listed = items(registry, &page)
        .map_err(unavailable)
        .and_then(|items| window.fill(items.into_iter().map(ItemView::listed)));
    match listed {
        Ok((items, next)) => ServerFrame::Items { items, next },
        Err(refusal) => ServerFrame::Error(refusal),
    }
}

/// One item whole: a pending one from the registry (which holds it even
/// when the store could not record it), a settled one from the store.
pub fn get(registry: &Registry, id: ItemId) -> ServerFrame {
    let pending = registry.pending().into_iter().find(|i| i.id == id);
    let found = match (pending, registry.store()) {
        (Some(item), _) => Ok(Some(ItemView::pending(&item))),
        (None, Some(store)) => store.get(id).map(|r| r.map(ItemView::from)),
        (None, None) => Ok(None),
    };
    match found {
        Ok(Some(item)) if json_len(&item) <= PAGE_BUDGET => ServerFrame::Item {
            item: Box::new(item),
        },
        // Only an item stored before asks were bounded (or one with a
        // vast session id or asker) is this large.
        Ok(Some(item)) => ServerFrame::Error(WireError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "item {id} is {} whole, more than one frame carries; `hark inbox --json` lists it clipped",
                size(json_len(&item))
            ),
        )),
        Ok(None) => ServerFrame::Error(WireError::new(
            ErrorCode::NotFound,
            format!("no item has the id {id}"),
        )),
        Err(e) => ServerFrame::Error(unavailable(e)),
    }
}

/// Which rows a page reads: from `offset`, at most [`PAGE_ROWS`] of the
/// `limit` the client still wants.
#[derive(Debug, Clone, Copy)]
struct Window {
    offset: u32,
    rows: u32,
    /// The client wants more rows than this page reads.
    wants_more: bool,
}

impl Window {
    fn new(offset: Option<u32>, limit: Option<u32>) -> Window {
        let wanted = limit.unwrap_or(u32::MAX);
        Window {
            offset: offset.unwrap_or(0),
            rows: wanted.min(PAGE_ROWS),
            wants_more: wanted > PAGE_ROWS,
        }
    }

    /// Keeps entries until the next would push the page past
    /// [`PAGE_BUDGET`], and says where the next page starts when the rows
    /// read did not all fit or more may follow them.
    fn fill<V: Serialize>(
        self,
        rows: impl ExactSizeIterator<Item = V>,
    ) -> Result<(Vec<V>, Option<u32>), WireError> {
        let read = rows.len();
        let mut used = 0;
        let mut page = Vec::new();
        for row in rows {
            // Its bytes and the comma before the next.
            let weight = json_len(&row) + 1;
            if used + weight > PAGE_BUDGET {
                if page.is_empty() {
                    // A clipped entry is bounded far below the budget;
                    // this is a refusal rather than a frame over the cap.
                    return Err(WireError::new(
                        ErrorCode::FrameTooLarge,
                        format!("entry {} is {} even clipped", self.offset, size(weight)),
                    ));
                }
                break;
            }
            used += weight;
            page.push(row);
        }
        let kept = page.len();
        let more = kept < read || (read == self.rows as usize && self.wants_more);
        Ok((page, more.then(|| self.offset + kept as u32)))
    }
}

fn unavailable(e: StoreError) -> WireError {
    WireError::new(ErrorCode::Unavailable, e.to_string())
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

impl InboxLimits {
    /// What a window shows: the app's inbox, and the web's.
    pub const SHOWN: InboxLimits = InboxLimits {
        history: 200,
        runs: 20,
        sessions: 20,
    };
}

/// The inbox as a page draws it (the app's window, a browser's), with
/// `pending_only` (the modal's) without history, runs and sessions. What
/// only the app knows (its view, do-not-disturb, a Quit waiting) is left
/// unset for it to fill in.
pub fn inbox_view(registry: &Registry, pending_only: bool) -> Result<InboxView, StoreError> {
    let limits = (!pending_only).then_some(InboxLimits::SHOWN);
    let inbox = inbox(registry, limits)?;
    Ok(InboxView {
        pending: inbox.pending,
        history: inbox.history,
        runs: inbox.runs,
        sessions: inbox.sessions,
        focus: None,
        view: None,
        do_not_disturb: false,
        quit_asked: false,
        store: registry.store_health().filter(StoreHealth::is_failing),
        now_ms: unix_ms(registry.clock().now()),
    })
}

/// An item that just settled, as followers see it: the device that replied
/// on the web named from the store.
pub fn settled(
    registry: &Registry,
    item: &Item,
    outcome: Outcome,
    replied_by: Option<Surface>,
    at: std::time::SystemTime,
) -> ItemView {
    let device = replied_by.as_ref().and_then(Surface::device);
    let mut view = ItemView::settled(item, outcome, replied_by, at);
    if let (Some(device), Some(store)) = (device, registry.store()) {
        view.replied_device = Some(DeviceRef {
            id: device,
            name: store.device_name(device).ok().flatten(),
        });
    }
    view
}

/// Mints a one-time pairing code for the web surface; `url` is where the
/// web surface serves, when it does.
pub fn pair_web(registry: &Registry, url: Option<&str>) -> ServerFrame {
    let Some(store) = registry.store() else {
        return ServerFrame::Error(WireError::new(ErrorCode::Unavailable, "there is no store"));
    };
    match crate::pairing::mint_code(store) {
        Ok(code) => ServerFrame::Pairing {
            url: url.map(|u| format!("{u}/pair.html#code={}", code.code)),
            code: code.code,
            expires_ms: unix_ms(code.expires),
        },
        Err(e) => ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string())),
    }
}

/// The paired web devices.
pub fn devices(registry: &Registry) -> ServerFrame {
    match registry.store().map(|s| s.devices()) {
        Some(Ok(devices)) => ServerFrame::Devices {
            devices: views::<_, DeviceView>(devices),
        },
        Some(Err(e)) => ServerFrame::Error(unavailable(e)),
        None => ServerFrame::Devices {
            devices: Vec::new(),
        },
    }
}

/// Revokes a paired device: its sessions end at once.
pub fn revoke_device(registry: &Registry, id: DeviceId) -> ServerFrame {
    match registry.store().map(|s| s.revoke_device(id)) {
        Some(Ok(true)) => {
            registry.devices_changed();
            ServerFrame::Revoked { id }
        }
        Some(Ok(false)) | None => ServerFrame::Error(WireError::new(
            ErrorCode::NotFound,
            format!("no paired device has the id {id}"),
        )),
        Some(Err(e)) => ServerFrame::Error(unavailable(e)),
    }
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

/// One page of the runs, newest first, from `offset` (up to `limit`).
pub fn runs(registry: &Registry, limit: Option<u32>, offset: Option<u32>) -> ServerFrame {
    let window = Window::new(offset, limit);
    let listed = match registry.store() {
        Some(store) => store
            .runs_page(window.rows, window.offset)
            .map_err(unavailable)
            .and_then(|runs| window.fill(runs.into_iter().map(|r| RunView::from(r).listed()))),
        None => Ok((Vec::new(), None)),
    };
    match listed {
        Ok((runs, next)) => ServerFrame::Runs { runs, next },
        Err(refusal) => ServerFrame::Error(refusal),
    }
}

/// One page of the sessions that asked, those waiting first, from `offset`.
pub fn sessions(registry: &Registry, limit: Option<u32>, offset: Option<u32>) -> ServerFrame {
    let window = Window::new(offset, limit);
    let listed = match registry.store() {
        Some(store) => store
            .sessions_page(window.rows, window.offset)
            .map_err(unavailable)
            .and_then(|rows| window.fill(rows.into_iter().map(|r| SessionView::from(r).listed()))),
        None => Ok((Vec::new(), None)),
    };
    match listed {
        Ok((sessions, next)) => ServerFrame::Sessions { sessions, next },
        Err(refusal) => ServerFrame::Error(refusal),
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
pub async fn follow(registry: &Registry, mut reader: SocketReader, writer: &mut WriteHalf) {
    let mut events = registry.subscribe();
    for item in registry.pending() {
        let frame = ServerFrame::Event {
            event: FeedEvent::Added,
            item: fitting(ItemView::pending(&item)),
        };
        if write_frame(writer, &frame).await.is_err() {
            return;
        }
    }
    let mut buf = Vec::new();
    loop {
        let frame = tokio::select! {
            event = events.recv() => match event {
                // The terminal feed follows items; runs are listed with `hark runs`.
                Ok(Event::RunChanged | Event::StoreHealth(_) | Event::DevicesChanged) => continue,
                Ok(Event::Added(item)) => ServerFrame::Event { event: FeedEvent::Added, item: fitting(ItemView::pending(&item)) },
                Ok(Event::Parked(item)) => ServerFrame::Event { event: FeedEvent::Parked, item: fitting(ItemView::pending(&item)) },
                Ok(Event::Settled { item, outcome, replied_by, at }) => ServerFrame::Event {
                    event: FeedEvent::Settled,
                    item: fitting(settled(registry, &item, outcome, replied_by, at)),
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
        if write_frame(writer, &frame).await.is_err() || lagged {
            return;
        }
    }
}

/// An item for the feed: whole when it fits a frame (a bounded ask always
/// does), else clipped as a listing shows it.
fn fitting(item: ItemView) -> Box<ItemView> {
    Box::new(if json_len(&item) <= PAGE_BUDGET {
        item
    } else {
        item.listed()
    })
}

#[cfg(test)]
mod tests;
