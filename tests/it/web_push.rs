//! The phone push through ntfy, against a real `hark serve` with `[web]`
//! and `[push]`: no ntfy server can be had here, so a local receiver on
//! 127.0.0.1 stands in for one. Each publish is checked against ntfy's
//! documented JSON publish format (a POST to the server's root: topic,
//! title, message, priority, tags, click, actions of type `http` with
//! label, url, method, headers, body), then a button is fired exactly as
//! the ntfy app fires it (a POST to its url with its headers and body):
//! the agent gets that option, the push is replaced by an "answered"
//! one with the same `sequence_id`; a token used twice, one whose item
//! settled, one expired and one never given are refused and change
//! nothing; an item that parks has its push replaced by one saying so,
//! whose buttons (their tokens held until it settles) resume the paused
//! run; `detail = "title-only"` publishes none of the question's text.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::inbox::ask_in_background;
use crate::support::*;

/// One request the receiver took.
#[derive(Debug)]
struct Published {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

/// A stand-in ntfy server: takes every request on a loopback port,
/// answers 200 with a message id as ntfy does, and hands each one over.
struct Receiver {
    url: String,
    published: mpsc::Receiver<Published>,
}

/// What was published, for a subscriber's poll (`GET /TOPIC/json?poll=1`,
/// as the ntfy app reads a topic): each message as one JSON line.
type Topics = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, published) = mpsc::channel();
        let topics = Topics::default();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let tx = tx.clone();
                let topics = topics.clone();
                std::thread::spawn(move || serve_connection(stream, &tx, &topics));
            }
        });
        Receiver { url, published }
    }

    /// The next publish, within a generous timeout.
    fn next(&self) -> Published {
        self.published
            .recv_timeout(Duration::from_secs(30))
            .expect("a publish to the ntfy server")
    }
}

/// Reads HTTP/1.1 requests off one connection (kept alive) until it closes.
fn serve_connection(stream: TcpStream, tx: &mpsc::Sender<Published>, topics: &Topics) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
        let length: usize = headers
            .get("content-length")
            .map_or(0, |l| l.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = match (method.as_str(), path.split_once("/json")) {
            ("GET", Some((topic, _))) => {
                let topic = topic.trim_start_matches('/');
                let kept = topics.lock().unwrap();
                let lines: Vec<String> = kept
                    .iter()
                    .filter(|m| m["topic"] == topic)
                    .map(Value::to_string)
                    .collect();
                lines.join("\n")
            }
            _ => {
                topics.lock().unwrap().push(body.clone());
                r#"{"id":"m1","event":"message"}"#.to_owned()
            }
        };
        // In one write: a response in pieces meets the client's delayed ACK.
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        writer.write_all(response.as_bytes()).unwrap();
        if method == "GET" {
            continue;
        }
        let _ = tx.send(Published {
            method,
            path,
            headers,
            body,
        });
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `hark serve` with `[web]` on loopback (its public URL the same) and
/// `[push]` to `receiver`.
fn serve_push(receiver: &Receiver, detail: &str) -> (Daemon, String) {
    let sandbox = sandbox();
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    // The config names the server; the topic and token are kept apart.
    std::fs::write(
        sandbox.config(),
        format!(
            "[web]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"{public}\"\n\
             [push]\nntfy = {{ server = \"{}\" }}\n\
             detail = \"{detail}\"\n",
            receiver.url
        ),
    )
    .unwrap();
    let mut setup = sandbox.hark([
        "push",
        "setup",
        "--topic",
        "hark-test-topic",
        "--token-stdin",
    ]);
    let out = output_with_stdin(&mut setup, "tk_ntfy_secret\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let daemon = serve_in(&sandbox, json!({}), &[]);
    daemon.log.wait_event("web surface listening", &[]);
    (daemon, public)
}

/// Checks `published` against ntfy's JSON publish format; its JSON.
fn ntfy_message(published: &Published, public: &str) -> Value {
    assert_eq!(published.method, "POST");
    assert_eq!(
        published.path, "/",
        "JSON is published to the server's root"
    );
    assert_eq!(
        published.headers.get("authorization").map(String::as_str),
        Some("Bearer tk_ntfy_secret")
    );
    assert!(
        published.headers["content-type"].starts_with("application/json"),
        "{:?}",
        published.headers
    );
    let m = &published.body;
    assert_eq!(m["topic"], "hark-test-topic", "{m}");
    assert!(m["title"].as_str().is_some_and(|t| !t.is_empty()), "{m}");
    assert!(m["message"].as_str().is_some_and(|t| !t.is_empty()), "{m}");
    let priority = m["priority"].as_u64().unwrap();
    assert!((1..=5).contains(&priority), "{m}");
    assert!(m["tags"].as_array().unwrap().iter().all(Value::is_string));
    // A tap opens the web surface on this item (through pairing).
    let id = m["sequence_id"].as_str().expect("a sequence id");
    assert_eq!(m["click"], format!("{public}/#item/{id}"), "{m}");
    let actions = m["actions"].as_array().unwrap();
    assert!(actions.len() <= 3, "ntfy shows at most three: {m}");
    for action in actions {
        assert_eq!(action["action"], "http", "{action}");
        assert!(action["label"].as_str().is_some_and(|l| !l.is_empty()));
        let url = action["url"].as_str().unwrap();
        assert!(url.starts_with(&format!("{public}/api/push/")), "{url}");
        assert_eq!(action["method"], "POST");
        assert_eq!(action["headers"], json!({}));
        assert_eq!(action["body"], "");
    }
    m.clone()
}

/// Fires a button as the ntfy app does: its method and url, its headers
/// and body. The status and the JSON answered.
fn fire(action: &Value) -> (StatusCode, Value) {
    assert_eq!(action["method"], "POST");
    let mut request = Client::new()
        .post(action["url"].as_str().unwrap())
        .timeout(Duration::from_secs(30))
        .body(action["body"].as_str().unwrap().to_owned());
    for (name, value) in action["headers"].as_object().unwrap() {
        request = request.header(name, value.as_str().unwrap());
    }
    let response = request.send().unwrap();
    let status = response.status();
    (status, response.json().unwrap())
}

fn button<'a>(message: &'a Value, label: &str) -> &'a Value {
    message["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["label"] == label)
        .unwrap_or_else(|| panic!("no button {label:?} in {message}"))
}

fn pending_ids(daemon: &Daemon) -> Vec<String> {
    inbox(&daemon.sandbox)
        .iter()
        .filter(|i| i["outcome"].is_null())
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

fn stack() -> Value {
    question(
        "Which stack?",
        "Stack",
        &["Rust (Recommended)", "Go", "Zig"],
        false,
    )
}

#[test]
fn a_push_button_answers_its_agent_once_and_nothing_else() {
    let receiver = Receiver::start();
    let (daemon, public) = serve_push(&receiver, "full");

    let asker_a = ask_in_background(&daemon, "push-a", questions(&[stack()]));
    let a = ntfy_message(&receiver.next(), &public);
    assert_eq!(
        a["message"], "Which stack?",
        "full detail carries the question"
    );
    assert!(a["title"].as_str().unwrap().starts_with("Stack — "), "{a}");
    let labels: Vec<&str> = a["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Rust (Recommended)", "Go", "Zig"]);
    let a_id = a["sequence_id"].as_str().unwrap().to_owned();
    assert_eq!(pending_ids(&daemon), [a_id.as_str()]);

    let asker_b = ask_in_background(&daemon, "push-b", questions(&[db()]));
    let b = ntfy_message(&receiver.next(), &public);
    let b_id = b["sequence_id"].as_str().unwrap().to_owned();
    assert_ne!(a_id, b_id);

    // Go, from the lock screen: the agent gets exactly that.
    let (status, outcome) = fire(button(&a, "Go"));
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let got: Value = serde_json::from_slice(&asker_a.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(got["outcome"], "answered", "{got}");
    assert_eq!(got["answers"], json!({"Which stack?": "Go"}));

    // Its push is replaced: the same sequence id, no buttons.
    let settled = ntfy_message(&receiver.next(), &public);
    assert_eq!(settled["sequence_id"], a_id.as_str());
    assert_eq!(settled["actions"], json!([]));
    assert_eq!(settled["message"], "Answered from this notification.");

    // The same button again, another of the settled item's, a forged one:
    // refused, and item B still waits.
    let (status, body) = fire(button(&a, "Go"));
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("gone")),
        "{body}"
    );
    let (status, body) = fire(button(&a, "Zig"));
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "not_pending");
    let forged = json!({"url": format!("{public}/api/push/{}", "0".repeat(64)), "method": "POST", "headers": {}, "body": ""});
    let (status, body) = fire(&forged);
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );

    // B's SQLite button, expired (aged in the store file as time would):
    // refused; B still waits.
    let store = rusqlite::Connection::open(daemon.sandbox.data_dir().join("hark.db")).unwrap();
    let aged = store
        .execute(
            "UPDATE push_tokens SET expires_ms = 1 WHERE item_id = ?1 AND choice = 'option:SQLite'",
            [&b_id],
        )
        .unwrap();
    assert_eq!(aged, 1, "one token per button, its hash kept");
    let (status, body) = fire(button(&b, "SQLite"));
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("gone")),
        "{body}"
    );
    assert_eq!(pending_ids(&daemon), [b_id.as_str()], "nothing changed");
    // No token is stored in the clear.
    let url = button(&b, "Postgres (Recommended)")["url"]
        .as_str()
        .unwrap();
    let token = url.rsplit('/').next().unwrap();
    let clear: i64 = store
        .query_row(
            "SELECT count(*) FROM push_tokens WHERE token_hash = ?1",
            [token],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(clear, 0);

    // B's other button still answers B.
    let (status, _) = fire(button(&b, "Postgres (Recommended)"));
    assert_eq!(status, StatusCode::OK);
    let got: Value = serde_json::from_slice(&asker_b.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(
        got["answers"],
        json!({"Which database?": "Postgres (Recommended)"})
    );

    // The history says the push answered.
    let history = inbox(&daemon.sandbox);
    let a_row = history.iter().find(|i| i["id"] == a_id.as_str()).unwrap();
    assert_eq!(a_row["replied_by"], "push");
    let listed = stdout(&succeed(&daemon.sandbox, &["inbox", "--all"]));
    assert!(
        listed.contains("answered on phone (from its notification)"),
        "{listed}"
    );

    // Failures are limited as pairings are: four so far, one more, and
    // then even a good token waits.
    let (status, _) = fire(&forged);
    assert_eq!(status, StatusCode::NOT_FOUND);
    let asker_c = ask_in_background(&daemon, "push-c", questions(&[db()]));
    receiver.next(); // B's "answered"
    let c = ntfy_message(&receiver.next(), &public);
    let (status, _) = fire(button(&c, "SQLite"));
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(pending_ids(&daemon).len(), 1, "C still waits");
    drop(asker_c);
}

#[test]
fn a_parked_items_push_says_so_and_its_buttons_still_resume_the_run() {
    let receiver = Receiver::start();
    let (daemon, public) = serve_push(&receiver, "full");
    // Nobody answers in the run's 1 s wait: the item parks, its agent is
    // paused.
    let run = crate::parking::parking_run(&daemon, "push-parked", &[]);
    let first = ntfy_message(&receiver.next(), &public);
    let id = first["sequence_id"].as_str().unwrap().to_owned();
    assert_eq!(first["message"], "Which database?");
    assert_eq!(crate::parking::parked(&daemon, "push-parked"), id);

    // Its push is replaced in place, saying so, with the same buttons.
    let parked = ntfy_message(&receiver.next(), &public);
    assert_eq!(parked["sequence_id"], id.as_str(), "{parked}");
    assert_eq!(
        parked["message"],
        "Parked: the agent is paused until you answer.\nWhich database?"
    );
    assert_eq!(parked["title"], first["title"]);
    assert!(
        parked["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("parked")),
        "{parked}"
    );
    assert_eq!(parked["actions"], first["actions"], "the same tokens");
    assert_eq!(parked["actions"].as_array().unwrap().len(), 2);
    // Its tokens last until it settles, as the item now waits.
    let store = rusqlite::Connection::open(daemon.sandbox.data_dir().join("hark.db")).unwrap();
    let held: i64 = store
        .query_row(
            "SELECT count(*) FROM push_tokens WHERE item_id = ?1 AND expires_ms = ?2",
            rusqlite::params![id, i64::MAX],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(held, 2, "both buttons' tokens are held");

    // SQLite, from the parked push: the agent resumes with it.
    let (status, outcome) = fire(button(&parked, "SQLite"));
    assert_eq!(status, StatusCode::OK, "{outcome}");
    crate::parking::resumed_with_sqlite(run);
    let settled = ntfy_message(&receiver.next(), &public);
    assert_eq!(settled["sequence_id"], id.as_str());
    assert_eq!(settled["message"], "Answered from this notification.");
    assert_eq!(settled["actions"], json!([]));
}

#[test]
fn title_only_publishes_none_of_the_question() {
    let receiver = Receiver::start();
    let (daemon, public) = serve_push(&receiver, "title-only");
    let secret = question(
        "Rotate the prod-db-7 credentials now?",
        "Credzz",
        &["Rotatezz", "Waitzz"],
        false,
    );
    let asker = ask_in_background(&daemon, "push-quiet", questions(&[secret]));
    let published = receiver.next();
    let m = ntfy_message(&published, &public);
    let raw = published.body.to_string();
    for text in ["prod-db-7", "Credzz", "Rotatezz", "Waitzz", "pick "] {
        assert!(!raw.contains(text), "{text:?} was published: {raw}");
    }
    assert_eq!(
        m["actions"],
        json!([]),
        "option labels are the agent's text: no buttons"
    );
    assert!(
        m["title"].as_str().unwrap().contains("session push-quiet"),
        "{m}"
    );
    drop(asker);
}

#[test]
fn push_without_the_web_surface_or_its_public_url_is_refused() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "[push]\nntfy = { topic = \"t\" }\n").unwrap();
    let out = hark(&sandbox, &["serve"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("`[push]` needs the web surface"), "{said}");

    std::fs::write(
        sandbox.config(),
        "[web]\nlisten = \"127.0.0.1:0\"\n[push]\nntfy = { topic = \"t\" }\n",
    )
    .unwrap();
    let out = hark(&sandbox, &["serve"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("`[push]` needs `[web] public_url`"), "{said}");
    // `hark doctor` says so too.
    let out = hark(&sandbox, &["doctor"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said
        .lines()
        .find(|l| l.contains("phone push"))
        .unwrap_or_else(|| panic!("no push line in {said}"));
    assert!(line.contains("public_url"), "{line}");
}

#[test]
fn an_approval_is_allowed_once_from_its_push() {
    let receiver = Receiver::start();
    let (daemon, public) = serve_push(&receiver, "title-only");
    // A write-mode approval on the socket, as an agent's gate asks it.
    let mut gate = Gate::connect(&daemon);
    let frame = json!({"type": "approve", "session_id": "gated", "tool_name": "Write",
        "input": {"file_path": "/srv/secret-plan.txt", "content": "x"}});
    let accepted = gate.ask(&frame);
    assert_eq!(accepted["type"], "accepted", "{accepted}");

    let published = receiver.next();
    let m = ntfy_message(&published, &public);
    assert_eq!(m["sequence_id"], accepted["id"]);
    assert!(
        !published.body.to_string().contains("secret-plan"),
        "title-only carries no target: {}",
        published.body
    );
    let labels: Vec<&str> = m["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Allow once", "Deny"]);

    let (status, outcome) = fire(button(&m, "Allow once"));
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let settled = gate.next();
    assert_eq!(settled["type"], "settled");
    assert_eq!(
        settled["outcome"],
        json!({"outcome": "approved", "scope": "action"}),
        "from a lock screen, this action alone"
    );
    let (status, body) = fire(button(&m, "Deny"));
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let updated = ntfy_message(&receiver.next(), &public);
    assert_eq!(updated["message"], "Allowed from this notification.");
}

/// A connection to the daemon's socket, as an agent's gate holds it.
struct Gate {
    reader: BufReader<std::os::unix::net::UnixStream>,
    writer: std::os::unix::net::UnixStream,
}

impl Gate {
    fn connect(daemon: &Daemon) -> Gate {
        let stream = std::os::unix::net::UnixStream::connect(daemon.sandbox.socket()).unwrap();
        Gate {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn ask(&mut self, frame: &Value) -> Value {
        self.writer
            .write_all(format!("{frame}\n").as_bytes())
            .unwrap();
        self.next()
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

#[test]
fn push_setup_keeps_a_new_unguessable_topic_owner_only_in_the_data_dir() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = sandbox();
    let first = hark(&sandbox, &["push", "setup"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let topic = stdout(&first).trim().to_owned();
    assert!(topic.starts_with("hark-") && topic.len() >= 37, "{topic}");
    let file = sandbox.data_dir().join("push.toml");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains(&topic), "{kept}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Again: the kept topic stays (the phone stays subscribed).
    let again = hark(&sandbox, &["push", "setup"]);
    assert_eq!(stdout(&again).trim(), topic);
    let bad = hark(&sandbox, &["push", "setup", "--topic", "a/b"]);
    assert_eq!(bad.status.code(), Some(2));
    // A config that still holds one inline is told how to move it.
    std::fs::write(
        sandbox.config(),
        "[push]\nntfy = { topic = \"inline-topic\", token = \"tk_inline\" }\n",
    )
    .unwrap();
    let doctor = stdout(&hark(&sandbox, &["doctor"]));
    assert!(
        doctor.contains("[push] ntfy.topic and [push] ntfy.token inline")
            && doctor.contains("hark push setup"),
        "{doctor}"
    );
}

/// What an agent's tool tries, detached from its process tree: read the
/// push's topic where the operator keeps it (the config, as the README once
/// showed it inline, and the data directory), poll the topic as the ntfy
/// app does, and press its own question's "Delete it" button.
const SELF_ANSWER: &str = r#"
import json, os, re, time, urllib.request
home = os.environ["HOME"]
def topic():
    for path in (os.environ["TARGET_CONFIG"], os.environ["TARGET_PUSH"]):
        try:
            text = open(path).read()
        except OSError:
            continue
        found = re.search(r'topic\s*=\s*"([^"]+)"', text)
        if found:
            return found.group(1)
def attempt():
    name = topic()
    if not name:
        return "no topic"
    deadline = time.time() + 20
    while time.time() < deadline:
        lines = urllib.request.urlopen(os.environ["NTFY"] + "/" + name + "/json?poll=1").read().decode()
        for line in filter(None, lines.splitlines()):
            for action in json.loads(line).get("actions", []):
                if action.get("label") == "Delete it":
                    request = urllib.request.Request(action["url"], data=(action.get("body") or "").encode(),
                                                     method=action.get("method", "POST"), headers=action.get("headers", {}))
                    return "pressed %d" % urllib.request.urlopen(request).status
        time.sleep(0.05)
    return "no push"
result = attempt()
open(home + "/self-answer.out", "w").write(result + "\n")
open(home + "/attack-done", "w").write("done\n")
"#;

#[test]
fn a_confined_agent_cannot_answer_itself_through_its_push() {
    let receiver = Receiver::start();
    let (daemon, public) = serve_push(&receiver, "full");
    let sandbox = &daemon.sandbox;
    // The config as the README once showed it: the topic inline.
    let config = std::fs::read_to_string(sandbox.config()).unwrap();
    std::fs::write(
        sandbox.config(),
        config.replace(
            &format!("ntfy = {{ server = \"{}\" }}", receiver.url),
            &format!(
                "ntfy = {{ server = \"{}\", topic = \"hark-test-topic\" }}",
                receiver.url
            ),
        ),
    )
    .unwrap();
    assert!(
        std::fs::read_to_string(sandbox.config())
            .unwrap()
            .contains("hark-test-topic")
    );
    let home = sandbox.path("home");
    std::fs::write(home.join("self-answer.py"), SELF_ANSWER).unwrap();
    let done = Lines::follow("the helper", crate::tree::fifo(&home.join("attack-done")));
    let ask = json!({"questions": [{
        "question": "Delete the staging database?", "header": "Staging", "multiSelect": false,
        "options": [{"label": "Delete it", "description": "drop it now"},
                    {"label": "Keep it", "description": "leave it"}]}]});
    let script = format!(
        "SHELL setsid -f python3 \"$HOME/self-answer.py\" </dev/null >/dev/null 2>&1\nASK {ask}"
    );
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(fake_claude())
        .args(["--session", "self-answer", "--", &script])
        .env("TARGET_CONFIG", sandbox.config())
        .env("TARGET_PUSH", sandbox.data_dir().join("push.toml"))
        .env("NTFY", &receiver.url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = run.spawn().unwrap();
    let id = daemon.log.question_id("self-answer");
    // The push went out (the helper had what it needed to find it)…
    let published = ntfy_message(&receiver.next(), &public);
    assert_eq!(published["sequence_id"], id.as_str());
    done.wait_for("the helper", |l| l == "done");
    // …and the operator answers once the helper has had its go.
    let _ = hark(sandbox, &["answer", &id, "--pick", "Keep it"]);
    let out = child.wait_with_output().unwrap();
    let said = std::fs::read_to_string(home.join("self-answer.out")).unwrap();
    assert_eq!(said.trim(), "no topic", "the helper read the topic");
    assert!(
        stdout(&out).contains(r#"{"answers":{"Delete the staging database?":"Keep it"}}"#),
        "{}\n{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
}
