//! The router called in-process as a tower `Service` (no socket): a
//! surface over a store in a temporary directory, its clocks the test's,
//! and requests as a browser or an agent would send them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use hark_core::config::Origin;
use hark_core::model::ids::{Clock, ItemId, SessionId};
use hark_core::model::item::{Asker, Item};
use hark_core::model::schema::{AskRequest, Question, QuestionOption};
use hark_core::pairing;
use hark_core::registry::{Pending, Registry};
use hark_core::store::Store;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt;

use crate::auth::{self, Ticks};
use crate::{Web, feed};

/// Where the surface says it listens, unless a test says otherwise.
pub const LISTEN: &str = "127.0.0.1:8787";

/// The monotonic clock the limiters read, moved by the test.
#[derive(Debug, Clone)]
pub struct Hands(Arc<Mutex<Instant>>);

impl Hands {
    pub fn new() -> Hands {
        Hands(Arc::new(Mutex::new(Instant::now())))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }

    pub fn ticks(&self) -> Ticks {
        let hands = self.0.clone();
        Ticks::from_fn(move || *hands.lock().unwrap())
    }
}

/// How a test's surface is served.
#[derive(Debug, Clone)]
pub struct Setup {
    pub listen: SocketAddr,
    pub secure: bool,
    pub origins: Vec<Origin>,
    /// The store's wall clock: pairing codes and sessions expire on it.
    pub clock: Clock,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            listen: LISTEN.parse().unwrap(),
            secure: false,
            origins: Vec::new(),
            clock: Clock::system(),
        }
    }
}

/// The web surface over a store in a temporary directory.
pub struct Surface {
    pub dir: Arc<tempfile::TempDir>,
    pub web: Arc<Web>,
    /// The limiters' clock.
    pub hands: Hands,
    /// Kept: the event streams end when it says stop, or is dropped.
    _stop: watch::Sender<bool>,
}

/// A paired browser's two secrets.
#[derive(Debug, Clone)]
pub struct Session {
    /// `hark_session=…`, as a `Cookie` header carries it.
    pub cookie: String,
    pub token: String,
    pub device: String,
}

/// An answer: its status, headers and body's text.
#[derive(Debug)]
pub struct Answered {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answered {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The refusal's `code`.
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
}

/// A request as a browser on the surface's own origin sends it, from
/// `127.0.0.1` (where an agent on the same host is too).
pub fn request(method: Method, path: &str) -> axum::http::request::Builder {
    let peer: SocketAddr = "127.0.0.1:50000".parse().unwrap();
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, LISTEN)
        .extension(ConnectInfo(peer))
}

/// A request with `cookie` and `token` if given, and `body` as JSON.
pub fn call(
    method: &Method,
    path: &str,
    body: &Option<Value>,
    cookie: Option<&str>,
    token: Option<&str>,
) -> Request<Body> {
    let mut builder = request(method.clone(), path);
    if let Some(cookie) = cookie {
        builder = builder.header(header::COOKIE, cookie);
    }
    if let Some(token) = token {
        builder = builder.header(auth::CSRF_HEADER, token);
    }
    match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => builder.body(Body::empty()),
    }
    .unwrap()
}

/// A pairing's request with `code`.
pub fn pairing(code: &str) -> Request<Body> {
    call(
        &Method::POST,
        "/api/pair",
        &Some(json!({"code": code, "device": "phone"})),
        None,
        None,
    )
}

impl Surface {
    pub fn new() -> Surface {
        Surface::with(Setup::default())
    }

    pub fn with(setup: Setup) -> Surface {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        Surface::on(dir, setup)
    }

    /// Another surface on this one's store, with `setup` (its clock: the
    /// same store as seen at another time).
    pub fn sharing(&self, setup: Setup) -> Surface {
        Surface::on(self.dir.clone(), setup)
    }

    fn on(dir: Arc<tempfile::TempDir>, setup: Setup) -> Surface {
        let store = Arc::new(Store::open(&dir.path().join("hark.db"), setup.clock).unwrap());
        let registry = Registry::with_store(Some(store.clone()));
        let hands = Hands::new();
        let (_stop, stopping) = watch::channel(false);
        let web = Arc::new(Web {
            feed: feed::Feed::start(&registry),
            registry,
            store,
            limiter: auth::Limiter::with_clock(hands.ticks()),
            push_limiter: auth::Limiter::with_clock(hands.ticks()),
            secure: setup.secure,
            listen: setup.listen,
            origins: setup.origins,
            stopping,
        });
        Surface {
            dir,
            web,
            hands,
            _stop,
        }
    }

    /// Sends `request`; its answer, the body read whole (or its first
    /// event, for a stream that does not end).
    pub async fn send(&self, request: Request<Body>) -> Answered {
        let response = crate::api::router(self.web.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        let streamed = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(frame) = body.frame().await {
                if let Some(data) = frame.unwrap().data_ref() {
                    bytes.extend_from_slice(data);
                    if status.is_success() && bytes.starts_with(b"id:") {
                        break; // an event stream's first event
                    }
                }
            }
        })
        .await;
        assert!(streamed.is_ok(), "no answer in 10 s");
        Answered {
            status,
            headers,
            body: String::from_utf8(bytes).unwrap(),
        }
    }

    /// Tries to pair with `code`; the answer, and the cookie it set
    /// (`name=value`).
    pub async fn try_pair(&self, code: &str) -> (Answered, Option<String>) {
        let mut request = pairing(code);
        let host = self.web.listen.to_string();
        request
            .headers_mut()
            .insert(header::HOST, host.parse().unwrap());
        let answered = self.send(request).await;
        let cookie = answered.headers.get(header::SET_COOKIE).map(|c| {
            cookie::Cookie::parse(c.to_str().unwrap())
                .unwrap()
                .stripped()
                .to_string()
        });
        (answered, cookie)
    }

    /// Pairs a device with a fresh code.
    pub async fn pair(&self) -> Session {
        let code = pairing::mint_code(&self.web.store).unwrap();
        let (answered, cookie) = self.try_pair(&code.code).await;
        assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
        let body = answered.json();
        Session {
            cookie: cookie.expect("pairing sets the cookie"),
            token: body["csrf"].as_str().unwrap().to_owned(),
            device: body["device"]["id"].as_str().unwrap().to_owned(),
        }
    }

    /// Opens a question with the options `a` and `b`, pending until answered.
    pub fn ask(&self) -> (ItemId, Pending) {
        let options = ["a", "b"]
            .map(|label| QuestionOption {
                label: label.to_owned(),
                description: String::new(),
                preview: None,
            })
            .to_vec();
        let item = Item {
            id: ItemId(uuid::Uuid::new_v4()),
            session_id: SessionId::unnamed(),
            run_id: None,
            asker: Asker::default(),
            request: AskRequest {
                questions: vec![Question {
                    question: "Which?".to_owned(),
                    header: "Pick".to_owned(),
                    options,
                    multi_select: false,
                    default: None,
                }],
            },
            approval: None,
            created_at: SystemTime::now(),
            timeout: Duration::from_secs(600),
            parking: None,
            mirrored: false,
        };
        let id = item.id;
        (id, self.web.registry.open(item))
    }
}

/// Every API request a session can make, on `item` and `device`: its
/// method, path and body.
pub fn every_call(item: ItemId, device: &str) -> Vec<(Method, String, Option<Value>)> {
    let skip = json!({"action": "skip"});
    vec![
        (Method::GET, "/api/session".to_owned(), None),
        (Method::GET, "/api/inbox".to_owned(), None),
        (Method::GET, "/api/items".to_owned(), None),
        (Method::GET, format!("/api/items/{item}"), None),
        (Method::GET, "/api/devices".to_owned(), None),
        (Method::GET, "/api/events".to_owned(), None),
        (
            Method::POST,
            "/api/markdown".to_owned(),
            Some(json!({"texts": ["*x*"]})),
        ),
        (Method::POST, format!("/api/items/{item}/reply"), Some(skip)),
        (
            Method::POST,
            format!("/api/items/{item}/verdict"),
            Some(json!({"label": "Deny"})),
        ),
        (Method::DELETE, format!("/api/devices/{device}"), None),
    ]
}
