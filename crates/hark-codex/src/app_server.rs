//! A client of the Codex app-server: WebSocket text frames carrying
//! JSON-RPC (without the `"jsonrpc"` member, as Codex writes them) over
//! the daemon's unix control socket. One task reads: replies go to the
//! request that awaits them, the server's requests and notifications to
//! the [`Incoming`] channel, in order. Writes go through one channel to
//! one writing task, so no two frames interleave.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::CodexError;

/// What the app-server sends that is not a reply.
#[derive(Debug)]
pub enum Incoming {
    /// A request the server waits on (an approval prompt): whichever
    /// client answers `id` first is heard.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

type Replies = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, CodexError>>>>>;

/// A connection to the app-server. Cloning shares it.
#[derive(Debug, Clone)]
pub struct AppServer {
    out: mpsc::UnboundedSender<Message>,
    replies: Replies,
    next: Arc<AtomicU64>,
}

impl AppServer {
    /// Connects to the control socket at `socket` — refused unless the
    /// server runs as this user — and opens the WebSocket. The receiver
    /// ends when the server goes away.
    pub async fn connect(
        socket: &Path,
    ) -> Result<(AppServer, mpsc::UnboundedReceiver<Incoming>), CodexError> {
        let stream = hark_core::platform::connect(socket)
            .await
            .map_err(|source| CodexError::Connect {
                socket: socket.to_owned(),
                source,
            })?;
        match hark_core::bridge::socket::peer_is_owner(&stream) {
            Ok(true) => {}
            Ok(false) => return Err(CodexError::NotOwner(socket.to_owned())),
            Err(source) => {
                return Err(CodexError::Connect {
                    socket: socket.to_owned(),
                    source,
                });
            }
        }
        let request = "ws://localhost/"
            .into_client_request()
            .map_err(|e| CodexError::Handshake(e.to_string()))?;
        let (ws, _) = tokio_tungstenite::client_async(request, stream)
            .await
            .map_err(|e| CodexError::Handshake(e.to_string()))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut outgoing) = mpsc::unbounded_channel::<Message>();
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let replies: Replies = Arc::default();
        tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                if let Err(e) = sink.send(message).await {
                    tracing::debug!("the app-server stopped reading: {e}");
                    return;
                }
            }
        });
        let waiting = replies.clone();
        tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let text = match frame {
                    Ok(Message::Text(text)) => text,
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => continue,
                };
                match serde_json::from_str::<Value>(&text) {
                    Ok(message) => route(message, &waiting, &incoming_tx),
                    Err(e) => tracing::debug!("not JSON from the app-server: {e}"),
                }
            }
            // Gone: every request still waiting hears so.
            for (_, reply) in waiting.lock().expect("replies").drain() {
                let _ = reply.send(Err(CodexError::Closed));
            }
        });
        let server = AppServer {
            out,
            replies,
            next: Arc::new(AtomicU64::new(1)),
        };
        Ok((server, incoming))
    }

    /// Sends a request and waits for its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, CodexError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.replies.lock().expect("replies").insert(id, tx);
        self.send(json!({"id": id, "method": method, "params": params}))?;
        rx.await.map_err(|_| CodexError::Closed)?
    }

    pub fn notify(&self, method: &str) -> Result<(), CodexError> {
        self.send(json!({"method": method}))
    }

    /// Answers the server's request `id`.
    pub fn respond(&self, id: &Value, result: Value) -> Result<(), CodexError> {
        self.send(json!({"id": id, "result": result}))
    }

    fn send(&self, message: Value) -> Result<(), CodexError> {
        self.out
            .send(Message::text(message.to_string()))
            .map_err(|_| CodexError::Closed)
    }
}

/// A reply to the request that awaits it; anything else to `incoming`.
fn route(mut message: Value, waiting: &Replies, incoming: &mpsc::UnboundedSender<Incoming>) {
    let method = message["method"].as_str().map(str::to_owned);
    let params = message["params"].take();
    match (method, message.get("id").cloned()) {
        (Some(method), Some(id)) => {
            let _ = incoming.send(Incoming::Request { id, method, params });
        }
        (Some(method), None) => {
            let _ = incoming.send(Incoming::Notification { method, params });
        }
        (None, Some(id)) => {
            let Some(reply) = id
                .as_u64()
                .and_then(|id| waiting.lock().expect("replies").remove(&id))
            else {
                return;
            };
            let result = match message.get("error") {
                Some(error) => Err(CodexError::Rpc(
                    error["message"].as_str().unwrap_or("an error").to_owned(),
                )),
                None => Ok(message["result"].take()),
            };
            let _ = reply.send(result);
        }
        (None, None) => {}
    }
}
