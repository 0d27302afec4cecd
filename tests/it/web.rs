//! The web surface's HTTP API, against a real `hark serve --web
//! 127.0.0.1:0` with a real HTTP client (reqwest): pairing with codes
//! `hark web pair` printed (the store keeps hashes only); sessions, which
//! need the cookie and the session's token on every request (a cookie
//! alone, as a server on another port of the host is sent it, opens
//! nothing), refused without changing anything; replies through the same
//! registry as the socket (an agent gets exactly the web's answer, a
//! mismatch is 409, one of a hundred racing replies wins); the SSE stream
//! resumed with `Last-Event-ID`; the device named in the history; HTTPS
//! with a certificate; a bad URL in the config; the surface stopping with
//! the daemon.
//!
//! Every Host, Origin, token, pairing-code and rate-limit case is also the
//! router's, in-process, in crates/hark-web (`origin/tests.rs`,
//! `auth/tests.rs`), with clocks the tests move; these keep what only the
//! whole daemon shows.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

use crate::inbox::ask_in_background;
use crate::support::*;

/// A daemon serving the web surface, and where.
struct Web {
    daemon: Daemon,
    url: String,
    http: Client,
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `hark serve --web 127.0.0.1:0` whose scripted operator answers nothing.
fn serve_web() -> Web {
    let daemon = serve_with(json!({}), &["--web", "127.0.0.1:0"]);
    let listening = daemon.log.wait_event("web surface listening", &[]);
    let url = listening["url"].as_str().unwrap().to_owned();
    Web {
        daemon,
        url,
        http: client(),
    }
}

/// A paired device: its cookie and its session's token (`csrf`, sent in
/// `X-CSRF-Token`).
#[derive(Debug, Clone)]
struct Device {
    id: String,
    cookie: String,
    csrf: String,
}

impl Web {
    fn pair_code(&self) -> String {
        let out = succeed(&self.daemon.sandbox, &["web", "pair"]);
        let text = stdout(&out);
        let mut lines = text.lines();
        let code = lines.next().unwrap().to_owned();
        let url = lines.next().unwrap();
        assert_eq!(url, format!("{}/pair.html#code={code}", self.url));
        code
    }

    fn try_pair(&self, code: &str, name: &str) -> Response {
        self.http
            .post(format!("{}/api/pair", self.url))
            .header("content-type", "application/json")
            .body(json!({"code": code, "device": name}).to_string())
            .send()
            .unwrap()
    }

    fn pair(&self, name: &str) -> Device {
        let response = self.try_pair(&self.pair_code(), name);
        assert_eq!(response.status(), StatusCode::OK);
        let set_cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_owned();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set_cookie.contains(attribute), "{set_cookie}");
        }
        assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let body: Value = response.json().unwrap();
        assert_eq!(body["device"]["name"], name);
        Device {
            id: body["device"]["id"].as_str().unwrap().to_owned(),
            cookie,
            csrf: body["csrf"].as_str().unwrap().to_owned(),
        }
    }

    /// A GET with the device's cookie and token, as its page sends it.
    fn get(&self, device: Option<&Device>, path: &str) -> Response {
        let mut request = self.http.get(format!("{}{path}", self.url));
        if let Some(device) = device {
            request = request
                .header("cookie", &device.cookie)
                .header("x-csrf-token", &device.csrf);
        }
        request.send().unwrap()
    }

    /// A GET with the device's cookie alone.
    fn get_with_cookie(&self, device: &Device, path: &str) -> Response {
        self.http
            .get(format!("{}{path}", self.url))
            .header("cookie", &device.cookie)
            .send()
            .unwrap()
    }

    fn get_json(&self, device: &Device, path: &str) -> Value {
        let response = self.get(Some(device), path);
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().unwrap()
    }

    /// A POST (or DELETE) with the device's cookie and `csrf` as its token.
    fn send(
        &self,
        method: reqwest::Method,
        device: Option<&Device>,
        csrf: Option<&str>,
        path: &str,
        body: Value,
    ) -> Response {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(device) = device {
            request = request.header("cookie", &device.cookie);
        }
        if let Some(csrf) = csrf {
            request = request.header("x-csrf-token", csrf);
        }
        request.send().unwrap()
    }

    fn post(&self, device: &Device, path: &str, body: Value) -> Response {
        self.send(
            reqwest::Method::POST,
            Some(device),
            Some(&device.csrf),
            path,
            body,
        )
    }

    /// Waits until the daemon has the question of `session` pending; its id.
    fn asked(&self, session: &str) -> String {
        let asked = self
            .daemon
            .log
            .wait_event("operator.question.asked", &[("session_id", session)]);
        asked["question_id"].as_str().unwrap().to_owned()
    }
}

fn error_code(response: Response) -> (StatusCode, String) {
    let status = response.status();
    let body: Value = response.json().unwrap();
    assert!(body["message"].is_string(), "{body}");
    (status, body["code"].as_str().unwrap().to_owned())
}

fn answer_db(label: &str) -> Value {
    json!({"action": "answer", "answers": {"Which database?": label}})
}

/// The asker's printed result.
fn outcome_of(asker: std::process::Child) -> Value {
    let out = asker.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_pages_are_served_with_their_types_and_a_strict_policy() {
    let web = serve_web();
    let index = web.get(None, "/");
    assert_eq!(index.status(), StatusCode::OK);
    let headers = index.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = index.text().unwrap();
    assert_eq!(
        html,
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/src/index.html")).unwrap()
    );
    let script = web.get(None, "/app.js");
    assert!(
        script.headers()["content-type"]
            .to_str()
            .unwrap()
            .contains("javascript")
    );
    let css = web.get(None, "/style.css");
    assert!(
        css.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert_eq!(
        web.get(None, "/nothing-here.js").status(),
        StatusCode::NOT_FOUND
    );
    // The TypeScript declarations are the checker's, not served.
    assert_eq!(
        web.get(None, "/bindings.ts").status(),
        StatusCode::NOT_FOUND
    );
    // The API is never stored by a cache.
    let api = web.get(None, "/api/session");
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(api.headers()["cache-control"], "no-store");
}

#[test]
fn a_code_pairs_once_and_a_wrong_used_or_expired_one_pairs_nothing() {
    let web = serve_web();
    let device = web.pair("Pixel 8");
    let session = web.get_json(&device, "/api/session");
    assert_eq!(session["device"]["id"], device.id.as_str());
    assert!(
        session.get("csrf").is_none(),
        "only the pairing gives the token: {session}"
    );

    // Wrong.
    let (status, code) = error_code(web.try_pair("ZZZZ-ZZZZ-ZZZZ-ZZZZ", "x"));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "forbidden")
    );
    // Used: a code pairs one device, once.
    let code = web.pair_code();
    assert_eq!(web.try_pair(&code, "first").status(), StatusCode::OK);
    let (status, _) = error_code(web.try_pair(&code, "second"));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Expired: its five minutes passed (set in the store, as time would).
    let code = web.pair_code();
    let db = rusqlite::Connection::open(web.daemon.sandbox.data_dir().join("hark.db")).unwrap();
    let aged = db
        .execute("UPDATE pairing_codes SET expires_ms = 0", [])
        .unwrap();
    assert_eq!(aged, 1, "the store keeps the one unused code");
    let (status, _) = error_code(web.try_pair(&code, "late"));
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The store holds only hashes of the code and the session token.
    let stored: Vec<String> = db
        .prepare("SELECT token_hash FROM web_sessions")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let token = device.cookie.split_once('=').unwrap().1;
    assert!(!stored.iter().any(|h| h == token));

    // Two devices paired (the wrong, used and late ones not); listed, this one current.
    let devices = web.get_json(&device, "/api/devices");
    let devices = devices.as_array().unwrap();
    assert_eq!(devices.len(), 2, "{devices:?}");
    let me = devices
        .iter()
        .find(|d| d["id"] == device.id.as_str())
        .unwrap();
    assert_eq!(me["current"], true);
    assert_eq!(me["name"], "Pixel 8");
    assert!(me["paired_ms"].is_u64() && me["last_seen_ms"].is_u64());
    let listed = stdout(&succeed(&web.daemon.sandbox, &["web", "devices", "--json"]));
    let listed: Vec<Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 2);
}

#[test]
fn without_a_session_or_its_token_nothing_changes() {
    let web = serve_web();
    let device = web.pair("laptop");
    let asker = ask_in_background(&web.daemon, "guarded", questions(&[db()]));
    let id = web.asked("guarded");
    let path = format!("/api/items/{id}/reply");

    // No session at all.
    let (status, _) = error_code(web.send(
        reqwest::Method::POST,
        None,
        Some(&device.csrf),
        &path,
        answer_db("SQLite"),
    ));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        web.get(None, "/api/inbox").status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        web.get(None, "/api/events").status(),
        StatusCode::UNAUTHORIZED
    );
    // A session, but another session's token. (Every other token, host
    // and origin case is the router's unit tests', in crates/hark-web.)
    let other = web.pair("phone");
    let (status, code) = error_code(web.send(
        reqwest::Method::POST,
        Some(&device),
        Some(&other.csrf),
        &path,
        answer_db("SQLite"),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    // A cross-origin request, even with both.
    let cross = web
        .http
        .post(format!("{}{path}", web.url))
        .header("cookie", &device.cookie)
        .header("x-csrf-token", &device.csrf)
        .header("origin", "http://evil.example")
        .body(answer_db("SQLite").to_string())
        .send()
        .unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    // A request for another host (a DNS-rebinding page).
    let rebound = web
        .http
        .get(format!("{}/api/session", web.url))
        .header("cookie", &device.cookie)
        .header("x-csrf-token", &device.csrf)
        .header("host", "evil.example:80")
        .send()
        .unwrap();
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    // A revoked device's session is gone at once.
    let revoked = web.send(
        reqwest::Method::DELETE,
        Some(&device),
        Some(&device.csrf),
        &format!("/api/devices/{}", other.id),
        json!({}),
    );
    assert_eq!(revoked.status(), StatusCode::OK);
    assert_eq!(
        web.get(Some(&other), "/api/session").status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = error_code(web.post(&other, &path, answer_db("SQLite")));
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Still pending, in the registry and for the web.
    let item = web.get_json(&device, &format!("/api/items/{id}"));
    assert_eq!(item["state"], "pending");
    assert!(item["outcome"].is_null());
    let pending = web.get_json(&device, "/api/items?state=pending");
    assert_eq!(pending.as_array().unwrap().len(), 1);
    assert!(inbox(&web.daemon.sandbox)[0]["outcome"].is_null());
    drop(asker);
}

#[test]
fn a_session_cookie_alone_as_another_port_is_sent_it_reads_and_answers_nothing() {
    // The operator's browser, paired, opened an agent's dev server on
    // another loopback port: cookies are not bound to a port, so it was
    // sent `hark_session`, and the agent replays it here. It has not the
    // session's token: that went once to the page that paired.
    let web = serve_web();
    let device = web.pair("laptop");
    let asker = ask_in_background(&web.daemon, "dev-server", questions(&[db()]));
    let id = web.asked("dev-server");
    for path in [
        "/api/session".to_owned(),
        "/api/inbox".to_owned(),
        "/api/inbox?pending_only=true".to_owned(),
        "/api/items".to_owned(),
        format!("/api/items/{id}"),
        "/api/devices".to_owned(),
        "/api/events".to_owned(),
    ] {
        let refused = web.get_with_cookie(&device, &path);
        let status = refused.status();
        let body = refused.text().unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "GET {path}: {body}");
        assert!(
            body.contains("X-CSRF-Token") && body.contains("hark web pair"),
            "the refusal says why and what to do: {body}"
        );
        assert!(!body.contains("Which database?"), "{body}");
        assert!(!body.contains(&device.csrf), "{body}");
    }
    for (path, body) in [
        (format!("/api/items/{id}/reply"), answer_db("SQLite")),
        (
            format!("/api/items/{id}/verdict"),
            json!({"label": "SQLite"}),
        ),
    ] {
        let (status, code) =
            error_code(web.send(reqwest::Method::POST, Some(&device), None, &path, body));
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::UNAUTHORIZED, "unauthorized"),
            "POST {path}"
        );
    }
    // Nothing was answered: the operator's page, with its token, answers.
    assert!(inbox(&web.daemon.sandbox)[0]["outcome"].is_null());
    let answered = web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        answer_db("Postgres (Recommended)"),
    );
    assert_eq!(answered.status(), StatusCode::OK);
    assert_eq!(
        outcome_of(asker)["answers"],
        json!({"Which database?": "Postgres (Recommended)"})
    );
}

#[test]
fn the_agent_receives_exactly_the_web_answer_and_history_names_the_device() {
    let web = serve_web();
    let device = web.pair("Pixel 8");
    let asker = ask_in_background(&web.daemon, "asks", questions(&[db()]));
    let id = web.asked("asks");

    let view = web.get_json(&device, "/api/inbox?pending_only=true");
    assert_eq!(view["pending"][0]["id"], id.as_str());
    assert_eq!(
        view["pending"][0]["request"]["questions"][0]["question"],
        "Which database?"
    );
    assert!(view["history"].as_array().unwrap().is_empty());
    assert_eq!(view["view"], Value::Null);
    assert_eq!(view["do_not_disturb"], false);
    assert_eq!(view["quit_asked"], false);
    assert!(view["now_ms"].is_u64());

    // An answer that does not fit is refused, and the item stays.
    let (status, code) = error_code(web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        answer_db("Oracle"),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "invalid")
    );
    // A verdict aimed at a question set is a mismatch.
    let (status, code) = error_code(web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        json!({"action": "approve"}),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "human_reply_mismatch")
    );

    let answered = web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        answer_db("SQLite"),
    );
    assert_eq!(answered.status(), StatusCode::OK);
    let outcome: Value = answered.json().unwrap();
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["answers"]["Which database?"], "SQLite");

    let got = outcome_of(asker);
    assert_eq!(got["outcome"], "answered", "{got}");
    assert_eq!(got["answers"], json!({"Which database?": "SQLite"}));

    // A second reply: not pending any more.
    let (status, code) = error_code(web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        answer_db("SQLite"),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "not_pending")
    );
    // Unknown ids.
    let (status, _) = error_code(web.get(
        Some(&device),
        "/api/items/00000000-0000-0000-0000-000000000000",
    ));
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = error_code(web.get(Some(&device), "/api/items/not-an-id"));
    assert_eq!(status, StatusCode::NOT_FOUND);

    // History: the web, and which device, over the API, the socket and the CLI.
    let settled = web.get_json(&device, "/api/items?state=settled");
    let item = &settled[0];
    assert_eq!(item["id"], id.as_str());
    assert_eq!(item["replied_by"], "web");
    assert_eq!(
        item["replied_device"],
        json!({"id": device.id, "name": "Pixel 8"})
    );
    let whole = web.get_json(&device, &format!("/api/items/{id}"));
    assert_eq!(whole["replied_device"]["name"], "Pixel 8");
    let stored = &inbox(&web.daemon.sandbox)[0];
    assert_eq!(stored["replied_by"], "web");
    assert_eq!(stored["replied_device"]["name"], "Pixel 8");
    let listed = stdout(&succeed(&web.daemon.sandbox, &["inbox", "--all"]));
    assert!(listed.contains("answered on phone (Pixel 8)"), "{listed}");
    let view = web.get_json(&device, "/api/inbox");
    assert_eq!(view["history"][0]["replied_device"]["name"], "Pixel 8");

    // Markdown, rendered as the app renders it.
    let rendered = web.post(
        &device,
        "/api/markdown",
        json!({"texts": ["**bold** <script>x</script>"]}),
    );
    let status = rendered.status();
    let html: Value = rendered.json().unwrap();
    assert_eq!(status, StatusCode::OK, "{html}");
    let html: Vec<String> = serde_json::from_value(html).unwrap();
    assert!(
        html[0].contains("<strong>bold</strong>") && !html[0].contains("<script>"),
        "{html:?}"
    );
}

/// Opens a write-mode approval for `Write` on the socket, as an agent's
/// gate would; the connection is the asker, waiting.
fn ask_approval(web: &Web) -> (UnixStream, String) {
    let mut stream = UnixStream::connect(web.daemon.sandbox.socket()).unwrap();
    let frame = json!({"type": "approve", "session_id": "gated", "tool_name": "Write",
        "input": {"file_path": "/tmp/x", "content": "x"}});
    stream.write_all(format!("{frame}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    let accepted: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(accepted["type"], "accepted", "{accepted}");
    (stream, accepted["id"].as_str().unwrap().to_owned())
}

#[test]
fn an_answer_aimed_at_an_approval_is_409_and_a_verdict_settles_it() {
    let web = serve_web();
    let device = web.pair("phone");
    let (stream, id) = ask_approval(&web);
    let (status, code) = error_code(web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        answer_db("SQLite"),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "human_reply_mismatch")
    );
    let (status, _) = error_code(web.post(
        &device,
        &format!("/api/items/{id}/verdict"),
        json!({"label": "Maybe"}),
    ));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let item = web.get_json(&device, &format!("/api/items/{id}"));
    assert_eq!(item["state"], "pending");
    assert_eq!(item["kind"], "approval");

    let label = item["request"]["questions"][0]["options"][0]["label"]
        .as_str()
        .unwrap()
        .to_owned();
    let decided = web.post(
        &device,
        &format!("/api/items/{id}/verdict"),
        json!({"label": label}),
    );
    assert_eq!(decided.status(), StatusCode::OK);
    let outcome: Value = decided.json().unwrap();
    assert_eq!(outcome["outcome"], "approved", "{outcome} for {label}");
    // The agent's gate hears it.
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    let settled: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(settled["type"], "settled");
    assert_eq!(settled["outcome"]["outcome"], "approved");
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: String,
    event: String,
    data: Value,
}

/// An open SSE stream, read event by event.
struct Stream {
    lines: std::io::Lines<BufReader<Response>>,
}

impl Stream {
    fn open(web: &Web, device: &Device, last_event_id: Option<&str>) -> Stream {
        let mut request = web
            .http
            .get(format!("{}/api/events", web.url))
            .header("cookie", &device.cookie)
            .header("x-csrf-token", &device.csrf);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Stream {
            lines: BufReader::new(response).lines(),
        }
    }

    /// The next event (keep-alive comments skipped); `None` when the stream ends.
    fn next(&mut self) -> Option<Sse> {
        let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
        for line in self.lines.by_ref() {
            let line = line.ok()?;
            if line.is_empty() {
                if !event.is_empty() {
                    return Some(Sse {
                        id,
                        event,
                        data: serde_json::from_str(&data).unwrap(),
                    });
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        None
    }

    fn next_of(&mut self, kind: &str) -> Sse {
        loop {
            let sse = self.next().expect("the stream ended");
            if sse.event == kind {
                return sse;
            }
        }
    }
}

#[test]
fn a_reconnecting_stream_gets_every_event_it_missed() {
    let web = serve_web();
    let device = web.pair("phone");
    let mut stream = Stream::open(&web, &device, None);
    // A new stream is told to list the inbox, once it is open.
    let hello = stream.next().unwrap();
    assert_eq!(hello.event, "resync");

    let first = ask_in_background(&web.daemon, "first", questions(&[db()]));
    let added = stream.next_of("added");
    assert_eq!(added.data["session_id"], "first");
    let seen = added.id.clone();
    drop(stream);

    // Two items asked while nobody listens.
    let second = ask_in_background(&web.daemon, "second", questions(&[db()]));
    web.asked("second");
    let third = ask_in_background(&web.daemon, "third", questions(&[features()]));
    web.asked("third");

    let mut resumed = Stream::open(&web, &device, Some(&seen));
    let a = resumed.next().unwrap();
    let b = resumed.next().unwrap();
    assert_eq!((a.event.as_str(), b.event.as_str()), ("added", "added"));
    assert_eq!(a.data["session_id"], "second");
    assert_eq!(b.data["session_id"], "third");
    let ids: Vec<u64> = [&seen, &a.id, &b.id]
        .iter()
        .map(|i| i.parse().unwrap())
        .collect();
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");

    // A settle reaches it as it happens, with who replied.
    let id = a.data["id"].as_str().unwrap();
    let replied = web.post(
        &device,
        &format!("/api/items/{id}/reply"),
        json!({"action": "skip"}),
    );
    assert_eq!(replied.status(), StatusCode::OK);
    let settled = resumed.next_of("settled");
    assert_eq!(settled.data["id"], id);
    assert_eq!(settled.data["replied_device"]["name"], "phone");

    // An id older than what is kept (or another daemon's) gets `resync` first.
    let mut stale = Stream::open(&web, &device, Some("1"));
    assert_eq!(stale.next().unwrap().event, "resync");

    // A revoked device's stream ends.
    succeed(&web.daemon.sandbox, &["web", "revoke", &device.id]);
    while resumed.next().is_some() {}
    for asker in [first, second, third] {
        let mut asker = asker;
        let _ = asker.kill();
        let _ = asker.wait();
    }
}

#[test]
fn a_hundred_racing_replies_from_the_web_and_the_socket_make_one_winner() {
    let web = Arc::new(serve_web());
    let device = web.pair("phone");
    let asker = ask_in_background(&web.daemon, "raced", questions(&[db()]));
    let id = web.asked("raced");
    let start = Arc::new(Barrier::new(100));
    let mut racers = Vec::new();
    for n in 0..100 {
        let (web, device, id, start) = (web.clone(), device.clone(), id.clone(), start.clone());
        racers.push(std::thread::spawn(move || {
            let label = if n % 2 == 0 {
                "SQLite"
            } else {
                "Postgres (Recommended)"
            };
            if n % 2 == 0 {
                start.wait();
                let response =
                    web.post(&device, &format!("/api/items/{id}/reply"), answer_db(label));
                match response.status() {
                    StatusCode::OK => Some(("web", label)),
                    StatusCode::CONFLICT => None,
                    other => panic!("web reply: {other}"),
                }
            } else {
                let mut command = web.daemon.sandbox.hark(["answer", &id, "--pick", label]);
                command
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                start.wait();
                let status = command.status().unwrap();
                match status.code() {
                    Some(0) => Some(("cli", label)),
                    Some(2) => None,
                    other => panic!("hark answer exited {other:?}"),
                }
            }
        }));
    }
    let winners: Vec<_> = racers
        .into_iter()
        .filter_map(|r| r.join().unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "{winners:?}");
    let (surface, label) = winners[0];
    let got = outcome_of(asker);
    assert_eq!(got["answers"], json!({"Which database?": label}));
    let stored = &inbox(&web.daemon.sandbox)[0];
    assert_eq!(stored["replied_by"], surface);
}

#[test]
fn plain_http_off_loopback_is_refused_with_what_to_do() {
    let sandbox = sandbox();
    let script = sandbox.path("script.json");
    std::fs::write(&script, "{}").unwrap();
    let out = sandbox
        .hark(["serve", "--prompter"])
        .arg(format!("script:{}", script.display()))
        .args(["--web", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--insecure-http"),
        "{err}"
    );
    assert!(err.contains("tls_cert"), "{err}");
}

/// Runs `program ARGS`, which must succeed; its stdout and stderr.
fn run(program: &str, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn with_a_certificate_it_serves_https_off_loopback_and_its_cookie_is_secure() {
    let sandbox = sandbox();
    let (cert, key) = (sandbox.path("cert.pem"), sandbox.path("key.pem"));
    let (cert_s, key_s) = (cert.display().to_string(), key.display().to_string());
    run(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            &key_s,
            "-out",
            &cert_s,
        ],
    );
    std::fs::write(
        sandbox.config(),
        format!("[web]\nlisten = \"0.0.0.0:0\"\ntls_cert = {cert_s:?}\ntls_key = {key_s:?}\n"),
    )
    .unwrap();
    let daemon = serve_in(&sandbox, json!({}), &[]);
    let listening = daemon.log.wait_event("web surface listening", &[]);
    let port = listening["addr"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let url = format!("https://127.0.0.1:{port}");
    assert_eq!(listening["url"], format!("https://0.0.0.0:{port}"));

    let code = stdout(&succeed(&sandbox, &["web", "pair"]));
    let code = code.lines().next().unwrap();
    let body = json!({"code": code, "device": "tls"}).to_string();
    let (headers, _) = run(
        "curl",
        &[
            "-sS",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "--cacert",
            &cert_s,
            "-H",
            "content-type: application/json",
            "--data",
            &body,
            &format!("{url}/api/pair"),
        ],
    );
    let headers = headers.to_lowercase();
    assert!(headers.starts_with("http/1.1 200"), "{headers}");
    let cookie = headers
        .lines()
        .find(|l| l.starts_with("set-cookie:"))
        .unwrap();
    assert!(
        cookie.contains("; secure") && cookie.contains("httponly"),
        "{cookie}"
    );
    assert!(headers.contains("strict-transport-security:"), "{headers}");
    // Plain HTTP on its port gets no page.
    let plain = std::process::Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://127.0.0.1:{port}/"),
        ])
        .output()
        .unwrap();
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "200");
}

#[test]
fn a_bad_url_in_the_config_stops_the_daemon_saying_which_and_why() {
    for (config, says) in [
        (
            "[web]\npublic_url = \"box.ts.net\"\n",
            "\"box.ts.net\" is not a URL",
        ),
        (
            "[web]\norigins = [\"https://box.ts.net/hark\"]\n",
            "is not an origin",
        ),
        (
            "[hub]\nurl = \"hub.example:4222\"\n",
            "is not a hub server's URL",
        ),
    ] {
        let sandbox = sandbox();
        std::fs::write(sandbox.config(), config).unwrap();
        let script = sandbox.path("script.json");
        std::fs::write(&script, "{}").unwrap();
        let out = sandbox
            .hark(["serve", "--prompter"])
            .arg(format!("script:{}", script.display()))
            .args(["--web", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{config}");
        let err = String::from_utf8_lossy(&out.stderr);
        let line = config.lines().nth(1).unwrap();
        assert!(
            err.contains("is not valid") && err.contains(line) && err.contains(says),
            "{config}: {err}"
        );
    }
}

#[test]
fn the_web_surface_stops_with_the_daemon_ending_its_streams() {
    let web = serve_web();
    let device = web.pair("phone");
    let mut stream = Stream::open(&web, &device, None);
    assert_eq!(stream.next().unwrap().event, "resync");
    web.daemon.terminate().unwrap();
    // The stream ends (rather than the process dying under it)…
    assert_eq!(stream.next(), None);
    // …because the surface stopped, gracefully, with the daemon.
    web.daemon.log.wait_event("web surface stopping", &[]);
    web.daemon.log.wait_event("web surface stopped", &[]);
}
