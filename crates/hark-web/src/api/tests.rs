//! The router called as a tower `Service`, with no socket: what a session
//! needs (its cookie and its token, on every request), what a pairing and
//! a push button's token can do, and what no answer gives away.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode, header};
use hark_core::model::ids::{Clock, ItemId, SessionId};
use hark_core::model::item::{Asker, Item};
use hark_core::model::schema::{AskRequest, Question, QuestionOption};
use hark_core::pairing;
use hark_core::registry::{Pending, Registry, Waited};
use hark_core::store::Store;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{Web, auth, feed};

/// Where the surface says it listens (the host check's).
const LISTEN: &str = "127.0.0.1:8787";

/// The web surface over a store in a temporary directory.
struct Surface {
    _dir: tempfile::TempDir,
    web: Arc<Web>,
}

/// A paired browser's two secrets.
struct Session {
    /// `hark_session=…`, as a `Cookie` header carries it.
    cookie: String,
    token: String,
    device: String,
}

/// An answer: its status and its body's text.
struct Answered {
    status: StatusCode,
    body: String,
}

impl Answered {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// A request as a browser on the surface's own origin sends it, from
/// `127.0.0.1` (where an agent on the same host is too).
fn request(method: Method, path: &str) -> axum::http::request::Builder {
    let peer: SocketAddr = "127.0.0.1:50000".parse().unwrap();
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, LISTEN)
        .extension(ConnectInfo(peer))
}

impl Surface {
    fn new() -> Surface {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap());
        let registry = Registry::with_store(Some(store.clone()));
        let web = Arc::new(Web {
            feed: feed::Feed::start(&registry),
            registry,
            store,
            limiter: auth::Limiter::default(),
            push_limiter: auth::Limiter::default(),
            secure: false,
            listen: LISTEN.parse().unwrap(),
            origins: Vec::new(),
        });
        Surface { _dir: dir, web }
    }

    /// Sends `request`; its answer, the body read whole (or its first
    /// frame, for a stream that does not end).
    async fn send(&self, request: Request<Body>) -> Answered {
        let response = super::router(self.web.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
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
            body: String::from_utf8(bytes).unwrap(),
        }
    }

    async fn try_pair(&self, code: &str) -> (Answered, Option<String>) {
        let response = super::router(self.web.clone())
            .oneshot(
                request(Method::POST, "/api/pair")
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(
                        json!({"code": code, "device": "phone"}).to_string(),
                    ))
                    .unwrap(),
            )
            .await
            .unwrap();
        let cookie = response
            .headers()
            .get(header::SET_COOKIE)
            .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned());
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = String::from_utf8(bytes.to_vec()).unwrap();
        (Answered { status, body }, cookie)
    }

    async fn pair(&self) -> Session {
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
    fn ask(&self) -> (ItemId, Pending) {
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
fn every_call(item: ItemId, device: &str) -> Vec<(Method, String, Option<Value>)> {
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

fn call(
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

#[tokio::test]
async fn a_session_cookie_without_its_token_reads_nothing_and_answers_nothing() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let other = surface.pair().await;
    let (id, _pending) = surface.ask();
    // What a server on another port of this host is sent: the cookie. With
    // no token, another session's, or an empty one: refused, whatever the
    // method. The token without the cookie is no session either.
    for (method, path, body) in every_call(id, &session.device) {
        for (cookie, token) in [
            (Some(session.cookie.as_str()), None),
            (Some(session.cookie.as_str()), Some(other.token.as_str())),
            (Some(session.cookie.as_str()), Some("")),
            (None, Some(session.token.as_str())),
        ] {
            let answered = surface
                .send(call(&method, &path, &body, cookie, token))
                .await;
            assert_eq!(
                (answered.status, answered.json()["code"].as_str()),
                (StatusCode::UNAUTHORIZED, Some("unauthorized")),
                "{method} {path} with {cookie:?} and {token:?}: {}",
                answered.body
            );
            if cookie.is_some() {
                assert!(
                    answered.body.contains("X-CSRF-Token"),
                    "the refusal says what is missing: {}",
                    answered.body
                );
            }
        }
    }
    // Nothing was answered or revoked.
    assert!(surface.web.registry.get(id).is_some(), "still pending");
    assert_eq!(surface.web.store.devices().unwrap().len(), 2);
    // With its token, the same cookie reads the question and answers it.
    let inbox = surface
        .send(call(
            &Method::GET,
            "/api/inbox",
            &None,
            Some(&session.cookie),
            Some(&session.token),
        ))
        .await;
    assert_eq!(inbox.status, StatusCode::OK, "{}", inbox.body);
    assert!(inbox.body.contains(&id.to_string()), "{}", inbox.body);
    let reply = surface
        .send(call(
            &Method::POST,
            &format!("/api/items/{id}/reply"),
            &Some(json!({"action": "skip"})),
            Some(&session.cookie),
            Some(&session.token),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(surface.web.registry.get(id).is_none(), "answered");
}

#[tokio::test]
async fn only_the_pairings_answer_carries_the_sessions_token() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (id, _pending) = surface.ask();
    for (method, path, body) in every_call(id, &session.device) {
        let answered = surface
            .send(call(
                &method,
                &path,
                &body,
                Some(&session.cookie),
                Some(&session.token),
            ))
            .await;
        // (The verdict comes after the reply settled the item: 409.)
        assert!(
            !matches!(
                answered.status,
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ),
            "{method} {path}: {} {}",
            answered.status,
            answered.body
        );
        assert!(
            !answered.body.contains(&session.token),
            "{method} {path} gave the token back: {}",
            answered.body
        );
    }
}

#[tokio::test]
async fn a_right_code_pairs_however_many_wrong_ones_came_from_its_address() {
    let surface = Surface::new();
    let mut throttled = 0;
    for _ in 0..25 {
        let (answered, cookie) = surface.try_pair("ZZZZ-ZZZZ-ZZZZ-ZZZZ").await;
        assert!(cookie.is_none());
        match answered.status {
            StatusCode::TOO_MANY_REQUESTS => throttled += 1,
            status => assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", answered.body),
        }
    }
    assert!(throttled > 0, "wrong codes past the limit are answered 429");
    // The operator's own code, from the same address, right after.
    let code = pairing::mint_code(&surface.web.store).unwrap();
    let (answered, cookie) = surface.try_pair(&code.code).await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
    assert!(cookie.is_some());
}

#[tokio::test]
async fn a_push_buttons_token_answers_its_choice_once_and_a_session_is_no_token() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (id, mut pending) = surface.ask();
    let token = pairing::secret().unwrap();
    surface
        .web
        .store
        .add_push_token(&pairing::hash(&token), id, "option:b", None)
        .unwrap();
    let push = |token: &str, session: Option<&Session>| {
        call(
            &Method::POST,
            &format!("/api/push/{token}"),
            &None,
            session.map(|s| s.cookie.as_str()),
            session.map(|s| s.token.as_str()),
        )
    };
    // A session's cookie and token do not stand for a button's token.
    let forged = surface.send(push(&"0".repeat(64), Some(&session))).await;
    assert_eq!(forged.status, StatusCode::NOT_FOUND, "{}", forged.body);
    assert!(surface.web.registry.get(id).is_some());

    let pressed = surface.send(push(&token, None)).await;
    assert_eq!(pressed.status, StatusCode::OK, "{}", pressed.body);
    assert!(surface.web.registry.get(id).is_none(), "answered");
    let waited = tokio::time::timeout(Duration::from_secs(10), pending.wait())
        .await
        .expect("the asker is answered");
    let Waited::Settled(outcome) = waited else {
        panic!("{waited:?}");
    };
    let outcome = serde_json::to_value(outcome).unwrap();
    assert_eq!(outcome["answers"], json!({"Which?": "b"}), "{outcome}");
    // Replayed: refused, and nothing more is said than that.
    let replayed = surface.send(push(&token, None)).await;
    assert_eq!(
        (replayed.status, replayed.json()["code"].as_str()),
        (StatusCode::GONE, Some("gone")),
        "{}",
        replayed.body
    );
}
