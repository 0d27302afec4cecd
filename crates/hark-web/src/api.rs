//! The HTTP API (JSON), as the README's table lists it. Reads go through
//! the functions the app's windows use (`operator::inbox_view`, `items`,
//! `get`); every reply goes through `Registry::reply` as the web surface
//! of the session's device, so the socket's rules hold: one reply wins, a
//! mismatched one is refused and changes nothing.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use hark_core::bridge::views::{DeviceView, ItemView};
use hark_core::bridge::wire::{ErrorCode, ServerFrame, WireError, WireReply};
use hark_core::daemon::operator;
use hark_core::model::ids::{DeviceId, ItemId};
use hark_core::model::item::{ItemFilter, Outcome, Surface};
use hark_core::pairing;
use hark_core::registry::Reply;
use hark_core::store::PushTaken;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use crate::Web;
use crate::auth::{self, Authed};
use crate::error::ApiError;
use crate::feed::Sent;

#[cfg(test)]
mod tests;

/// The web surface's routes, with its headers and origin checks.
pub fn router(web: Arc<Web>) -> Router {
    let secure = web.secure;
    Router::new()
        .route("/", get(crate::assets::index))
        .route("/{*path}", get(crate::assets::page))
        .route("/api/pair", post(pair))
        .route("/api/session", get(session))
        .route("/api/inbox", get(inbox))
        .route("/api/items", get(items))
        .route("/api/items/{id}", get(item))
        .route("/api/items/{id}/reply", post(reply))
        .route("/api/items/{id}/verdict", post(verdict))
        .route("/api/events", get(events))
        .route("/api/markdown", post(markdown))
        .route("/api/devices", get(devices))
        .route("/api/devices/{id}", delete(revoke))
        .route("/api/push/{token}", post(push))
        .fallback(|| async { ApiError::not_found("no such page") })
        .layer(axum::middleware::from_fn_with_state(
            web.clone(),
            crate::origin::same_origin,
        ))
        .layer(axum::middleware::from_fn(move |request, next| {
            crate::assets::secure_headers(secure, request, next)
        }))
        .with_state(web)
}

type Answer<T> = Result<axum::Json<T>, ApiError>;

/// A JSON body, refused as `invalid` (400) when it is not one.
fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid(format!("not the JSON expected: {e}")))
}

fn item_id(raw: &str) -> Result<ItemId, ApiError> {
    raw.parse::<uuid::Uuid>()
        .map(ItemId)
        .map_err(|_| ApiError::not_found(format!("no item has the id {raw:?}")))
}

/// A device as the session's answers name it.
#[derive(Debug, Serialize)]
struct DeviceBrief {
    id: DeviceId,
    name: String,
}

/// The pairing's answer: the only one that carries the session's token.
#[derive(Debug, Serialize)]
struct PairedBody {
    device: DeviceBrief,
    csrf: String,
}

/// A session as it is asked about: its device, never its token (a cookie
/// must not be a way to it).
#[derive(Debug, Serialize)]
struct SessionBody {
    device: DeviceBrief,
}

#[derive(Debug, Deserialize)]
struct PairBody {
    code: String,
    /// What the operator calls the device.
    #[serde(default)]
    device: String,
}

/// `POST /api/pair`: a one-time code for a session: the cookie, and its
/// token in the answer's body, given this once (see [`crate::auth`]). A right code always pairs: what shares the operator's
/// address (an agent on the same loopback) cannot lock the operator out by
/// guessing wrong. Wrong ones are counted per client address and overall,
/// and past the limit answered 429; a code's 80 bits make guessing one in
/// its five minutes hopeless at any rate.
async fn pair(
    State(web): State<Arc<Web>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let asked: PairBody = body(&bytes)?;
    let paired =
        pairing::pair(&web.store, &asked.code, &asked.device).map_err(ApiError::unavailable)?;
    let Some(paired) = paired else {
        if let Err(wait) = web.limiter.check(peer.ip()) {
            return Err(ApiError::too_many("wrong codes", wait));
        }
        web.limiter.failed(peer.ip());
        tracing::warn!(peer = %peer.ip(), "a pairing with a wrong, used or expired code was refused");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "forbidden",
            "that code is wrong, used or expired: `hark web pair` gives a new one",
        ));
    };
    tracing::info!(device = %paired.device.id, name = %paired.device.name, "a web device paired");
    web.registry.devices_changed();
    let cookie = auth::session_cookie(&paired.token, web.secure);
    let answer = PairedBody {
        device: DeviceBrief {
            id: paired.device.id,
            name: paired.device.name,
        },
        csrf: paired.csrf,
    };
    let mut response = axum::Json(answer).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// `GET /api/session`: the session's device (whether the page's cookie
/// and token still open one).
async fn session(authed: Authed) -> Answer<SessionBody> {
    Ok(axum::Json(SessionBody {
        device: DeviceBrief {
            id: authed.session.device.id,
            name: authed.session.device.name,
        },
    }))
}

#[derive(Debug, Deserialize)]
struct InboxQuery {
    #[serde(default)]
    pending_only: bool,
}

/// `GET /api/inbox`: what the app's window draws from.
async fn inbox(
    State(web): State<Arc<Web>>,
    _authed: Authed,
    Query(query): Query<InboxQuery>,
) -> Answer<hark_core::bridge::views::InboxView> {
    operator::inbox_view(&web.registry, query.pending_only)
        .map(axum::Json)
        .map_err(ApiError::unavailable)
}

#[derive(Debug, Deserialize)]
struct ItemsQuery {
    /// `pending` or `settled`; both when absent.
    state: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
}

/// The most items one listing returns.
const ITEMS_MAX: u32 = 500;

/// `GET /api/items?state=pending|settled`: whole items, newest first.
async fn items(
    State(web): State<Arc<Web>>,
    _authed: Authed,
    Query(query): Query<ItemsQuery>,
) -> Answer<Vec<ItemView>> {
    let pending = match query.state.as_deref() {
        None => None,
        Some("pending") => Some(true),
        Some("settled") => Some(false),
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "state is pending or settled, not {other:?}"
            )));
        }
    };
    let filter = ItemFilter {
        pending,
        limit: Some(query.limit.unwrap_or(ITEMS_MAX).min(ITEMS_MAX)),
        offset: query.offset,
        ..ItemFilter::default()
    };
    operator::items(&web.registry, &filter)
        .map(axum::Json)
        .map_err(ApiError::unavailable)
}

/// `GET /api/items/{id}`: one item whole.
async fn item(
    State(web): State<Arc<Web>>,
    _authed: Authed,
    Path(id): Path<String>,
) -> Answer<ItemView> {
    match operator::get(&web.registry, item_id(&id)?) {
        ServerFrame::Item { item } => Ok(axum::Json(*item)),
        ServerFrame::Error(e) => Err(e.into()),
        other => Err(ApiError::unavailable(format!("unexpected {other:?}"))),
    }
}

async fn replied(web: &Web, authed: &Authed, id: ItemId, reply: Reply) -> Answer<Outcome> {
    let device = authed.session.device.id;
    let outcome = web
        .registry
        .reply(id, reply, Surface::Web { device })
        .await
        .map_err(WireError::from)?;
    Ok(axum::Json(outcome))
}

/// `POST /api/items/{id}/reply`: the socket's reply (answer, skip,
/// approve, deny, cancel), from this device.
async fn reply(
    State(web): State<Arc<Web>>,
    authed: Authed,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<Outcome> {
    let id = item_id(&id)?;
    let wire: WireReply = body(&bytes)?;
    replied(&web, &authed, id, wire.into()).await
}

#[derive(Debug, Deserialize)]
struct VerdictBody {
    label: String,
}

/// `POST /api/items/{id}/verdict`: an approval's verdict by the option's
/// label, as the app's modal sends it.
async fn verdict(
    State(web): State<Arc<Web>>,
    authed: Authed,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<Outcome> {
    let id = item_id(&id)?;
    let asked: VerdictBody = body(&bytes)?;
    let reply = Reply::verdict(&asked.label).map_err(WireError::from)?;
    replied(&web, &authed, id, reply).await
}

#[derive(Debug, Deserialize)]
struct MarkdownBody {
    texts: Vec<String>,
}

/// `POST /api/markdown`: agents' texts as sanitized HTML, as the app renders them.
async fn markdown(_authed: Authed, bytes: Bytes) -> Answer<Vec<String>> {
    let asked: MarkdownBody = body(&bytes)?;
    crate::markdown::render_all(&asked.texts)
        .map(axum::Json)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

/// `GET /api/devices`: the paired devices, this one marked `current`.
async fn devices(State(web): State<Arc<Web>>, authed: Authed) -> Answer<Vec<DeviceView>> {
    let devices = web.store.devices().map_err(ApiError::unavailable)?;
    Ok(axum::Json(
        devices
            .into_iter()
            .map(|d| {
                let mut view = DeviceView::from(d);
                view.current = view.id == authed.session.device.id;
                view
            })
            .collect(),
    ))
}

#[derive(Debug, Serialize)]
struct RevokedBody {
    id: DeviceId,
}

/// `DELETE /api/devices/{id}`: revokes a device; its sessions end at once
/// (this one's cookie is dropped when it revokes itself).
async fn revoke(
    State(web): State<Arc<Web>>,
    authed: Authed,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id: DeviceId = id
        .parse()
        .map_err(|_| ApiError::not_found(format!("no paired device has the id {id:?}")))?;
    match operator::revoke_device(&web.registry, id) {
        ServerFrame::Revoked { id } => {
            tracing::info!(device = %id, by = %authed.session.device.id, "a web device was revoked");
            let mut response = axum::Json(RevokedBody { id }).into_response();
            if id == authed.session.device.id
                && let Ok(cookie) = HeaderValue::from_str(&auth::cleared_cookie(web.secure))
            {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            Ok(response)
        }
        ServerFrame::Error(e) => Err(e.into()),
        other => Err(ApiError::unavailable(format!("unexpected {other:?}"))),
    }
}

/// `POST /api/push/{token}`: a push button, as the ntfy app calls it (no
/// session, no CSRF token: the one-time token is the credential, bound to
/// its item and choice). A token used before or expired is 410, one never
/// given 404, one whose item settled 409; each counts as a failure, limited
/// per client address and overall (429), and changes nothing.
async fn push(
    State(web): State<Arc<Web>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(token): Path<String>,
) -> Answer<Outcome> {
    if let Err(wait) = web.push_limiter.check(peer.ip()) {
        return Err(ApiError::too_many("wrong push tokens", wait));
    }
    let refused = |refusal: ApiError| {
        web.push_limiter.failed(peer.ip());
        tracing::warn!(peer = %peer.ip(), code = %refusal.body.code, "a push button's call was refused");
        Err(refusal)
    };
    let taken = web
        .store
        .take_push_token(&pairing::hash(&token))
        .map_err(ApiError::unavailable)?;
    let (id, choice) = match taken {
        PushTaken::Taken { item, choice } => (item, choice),
        PushTaken::Used => {
            return refused(ApiError::new(
                StatusCode::GONE,
                "gone",
                "this button was used already",
            ));
        }
        PushTaken::Expired => {
            return refused(ApiError::new(
                StatusCode::GONE,
                "gone",
                "this button has expired",
            ));
        }
        PushTaken::Unknown => return refused(ApiError::not_found("no such push button")),
    };
    let Some(item) = web.registry.get(id) else {
        return refused(
            WireError::new(
                ErrorCode::NotPending,
                format!("item {id} is not pending (already settled)"),
            )
            .into(),
        );
    };
    let Some(reply) = crate::push::reply_of(&item, &choice) else {
        return refused(ApiError::invalid("this button does not fit its item"));
    };
    match web.registry.reply(id, reply, Surface::Push).await {
        Ok(outcome) => {
            tracing::info!(question_id = %id, "answered from the phone's push");
            Ok(axum::Json(outcome))
        }
        Err(e) => refused(WireError::from(e).into()),
    }
}

/// How often a quiet stream gets a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `GET /api/events`: the SSE stream of changes, resumed from
/// `Last-Event-ID` (see [`crate::feed`]). It ends when the device is
/// revoked. The page reads it with `fetch`, not `EventSource`, which
/// cannot send the session's token.
async fn events(
    State(web): State<Arc<Web>>,
    authed: Authed,
    headers: HeaderMap,
) -> Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>> {
    let last_seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let joined = web.feed.join(last_seen);
    let (tx, rx) = tokio::sync::mpsc::channel::<Arc<Sent>>(64);
    let mut stopping = web.stopping.clone();
    tokio::spawn(async move {
        let mut last = 0;
        for sent in joined.first {
            last = sent.id;
            if tx.send(sent).await.is_err() {
                return;
            }
        }
        let mut live = joined.live;
        loop {
            let sent = tokio::select! {
                received = live.recv() => match received {
                    Ok(sent) => sent,
                    Err(RecvError::Lagged(_)) => web.feed.resync_now(),
                    Err(RecvError::Closed) => return,
                },
                () = tx.closed() => return,
                // The daemon stops: the stream ends, so the server's
                // graceful shutdown does not wait on it.
                _ = stopping.wait_for(|stopping| *stopping) => return,
            };
            if sent.kind != "resync" && sent.id <= last {
                continue;
            }
            last = last.max(sent.id);
            let ends = sent.kind == "devices"
                && !matches!(pairing::session(&web.store, &authed.token), Ok(Some(_)));
            if ends || tx.send(sent).await.is_err() {
                return;
            }
        }
    });
    let stream = ReceiverStream::new(rx).map(|sent| {
        Ok(SseEvent::default()
            .id(sent.id.to_string())
            .event(sent.kind)
            .data(sent.data.as_str()))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}
