//! The desktop app serving the web surface too (`[web]` in its config):
//! one item, a hundred replies racing to it from every surface at once —
//! a paired browser's `POST /api/items/ID/reply`, `hark answer` over the
//! socket, and the app's own window, both its modal's Submit (clicked as a
//! person does) and the page's `reply` command (the IPC call the modal
//! makes, `Surface::Desktop`) — and exactly one wins: the agent gets its
//! answer, every other reply is refused as not pending, and the store
//! names the surface that won. Twice: all at one instant, and with the
//! desktop's a little ahead, so the desktop's winning is seen too.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::inbox::ask_in_background_in;
use crate::support::desktop::Desktop;
use crate::support::*;

/// Each surface answers with its own option, so the agent's answer says
/// which reply won.
const QUESTION: &str = "Which surface wins?";
const WEB: &str = "web";
const SOCKET: &str = "socket";
const DESKTOP: &str = "desktop";
const MODAL: &str = "modal";

/// How many replies each surface sends; the modal's Submit is the
/// hundredth.
const EACH: usize = 33;

fn answer(label: &str) -> Value {
    json!({"action": "answer", "answers": {QUESTION: label}})
}

/// A paired browser's cookie and CSRF token, from `hark web pair`'s code.
fn pair(sandbox: &Sandbox, url: &str) -> (String, String) {
    let pairing: Value =
        serde_json::from_slice(&succeed(sandbox, &["web", "pair", "--json"]).stdout).unwrap();
    let response = Client::new()
        .post(format!("{url}/api/pair"))
        .header("content-type", "application/json")
        .body(json!({"code": pairing["code"], "device": "racing phone"}).to_string())
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let body: Value = response.json().unwrap();
    (cookie, body["csrf"].as_str().unwrap().to_owned())
}

/// A reply that won: its surface's label.
type Won = Option<&'static str>;

/// How far ahead the racers' start is set: time enough for each to be
/// ready (the page's script to arrive through WebDriver, each request
/// built, each `hark answer` command made).
const READY: Duration = Duration::from_millis(1500);

/// Waits for the start instant every racer was given. A barrier cannot
/// reach into the app's page, so every racer, the page too, starts at one
/// agreed instant of the machine's clock.
fn start_at(at: SystemTime) {
    if let Ok(left) = at.duration_since(SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// Sends one web reply at `at`; `Some(WEB)` if it won.
fn web_reply(url: String, id: String, cookie: String, csrf: String, at: SystemTime) -> Won {
    let request = Client::new()
        .post(format!("{url}/api/items/{id}/reply"))
        .header("content-type", "application/json")
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .body(answer(WEB).to_string());
    start_at(at);
    let response = request.send().unwrap();
    match response.status() {
        StatusCode::OK => Some(WEB),
        StatusCode::CONFLICT => None,
        other => panic!(
            "web reply: {other}: {}",
            response.text().unwrap_or_default()
        ),
    }
}

/// Runs one `hark answer` over the socket at `at`; `Some(SOCKET)`
/// if it won.
fn socket_reply(sandbox: Sandbox, id: String, at: SystemTime) -> Won {
    let mut command = sandbox.hark(["answer", &id, "--pick", SOCKET]);
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    start_at(at);
    match command.status().unwrap().code() {
        Some(0) => Some(SOCKET),
        Some(2) => None,
        other => panic!("hark answer exited {other:?}"),
    }
}

/// The paired browser: the surface's URL, its cookie and CSRF token.
struct Paired {
    url: String,
    cookie: String,
    csrf: String,
}

/// An item asked in `session`, raced by a hundred replies: the web's and
/// the socket's at one instant, the desktop's `lead` earlier. Asserts that
/// exactly one won and the agent got its answer; the winner's label.
async fn race(desktop: &Desktop, web: &Paired, session: &str, lead: Duration) -> String {
    let asked = question(QUESTION, "Race", &[WEB, SOCKET, DESKTOP, MODAL], false);
    let asker = ask_in_background_in(&desktop.sandbox, session, questions(&[asked]));
    let id = desktop.log.question_id(session);
    // The window shows it, the modal's option picked: its Submit is ready.
    desktop.view("modal").await;
    desktop.wait_for_question(QUESTION).await;
    desktop.pick(MODAL).await;

    let at = SystemTime::now() + READY;
    let mut racers = Vec::new();
    for _ in 0..EACH {
        let (url, item) = (web.url.clone(), id.clone());
        let (cookie, csrf) = (web.cookie.clone(), web.csrf.clone());
        racers.push(std::thread::spawn(move || {
            web_reply(url, item, cookie, csrf, at)
        }));
        let (sandbox, item) = (desktop.sandbox.clone(), id.clone());
        racers.push(std::thread::spawn(move || socket_reply(sandbox, item, at)));
    }
    // The desktop's: the modal's Submit clicked, and the page's own reply
    // command called the rest of its share of times; each call's result is
    // what the app answered.
    let at_ms = (at - lead).duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let results = desktop
        .client
        .execute_async(
            "const [id, n, answer, at, done] = arguments;
             const invoke = window.__TAURI_INTERNALS__.invoke;
             const early = Date.now() < at;
             setTimeout(() => {
               document.getElementById('submit').click();
               Promise.allSettled(Array.from({length: n}, () => invoke('reply', {id, reply: answer})))
                 .then((all) => done({early, results: all.map((r) => r.status === 'fulfilled' ? 'won' : r.reason.code)}));
             }, at - Date.now());",
            vec![json!(id), json!(EACH), answer(DESKTOP), json!(at_ms)],
        )
        .await
        .unwrap();
    assert_eq!(
        results["early"], true,
        "the page was ready before the start"
    );
    let results: Vec<String> = serde_json::from_value(results["results"].clone()).unwrap();
    assert_eq!(results.len(), EACH);
    let mut won: Vec<&str> = racers
        .into_iter()
        .filter_map(|r| r.join().unwrap())
        .collect();
    for result in &results {
        match result.as_str() {
            "won" => won.push(DESKTOP),
            "not_pending" => {}
            other => panic!("the desktop's reply was refused with {other}"),
        }
    }

    // The agent got one answer; it names the winner, and no other reply
    // than the winner's says it won (the modal's click reports on its
    // page, so it won when the agent got its option and no one else won).
    let out = asker.wait_with_output().unwrap();
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let winner = got["answers"][QUESTION].as_str().unwrap().to_owned();
    if winner == MODAL {
        assert_eq!(won, Vec::<&str>::new(), "the modal's Submit won");
    } else {
        assert_eq!(won, [winner.as_str()], "exactly one winner");
    }
    let stored = inbox(&desktop.sandbox);
    let stored = stored.iter().find(|i| i["id"] == id.as_str()).unwrap();
    let surface = match winner.as_str() {
        SOCKET => "cli",
        MODAL => DESKTOP,
        other => other,
    };
    assert_eq!(stored["replied_by"], surface, "{stored}");
    winner
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_replies_from_web_socket_and_desktop_make_exactly_one_winner() {
    let desktop = Desktop::start_configured("[web]\nlisten = \"127.0.0.1:0\"\n").await;
    let listening = desktop.log.wait_event("web surface listening", &[]);
    let url = listening["url"].as_str().unwrap().to_owned();
    let (sandbox, at) = (desktop.sandbox.clone(), url.clone());
    let (cookie, csrf) = tokio::task::spawn_blocking(move || pair(&sandbox, &at))
        .await
        .unwrap();
    let web = Paired { url, cookie, csrf };
    // All at one instant (the web's ready requests are the quickest here),
    // then with the desktop's a little ahead: whichever comes first, it
    // alone wins.
    let first = race(&desktop, &web, "raced", Duration::ZERO).await;
    let second = race(&desktop, &web, "desktop-ahead", Duration::from_millis(250)).await;
    eprintln!("the winners: {first}, then {second}");
    assert!(
        [DESKTOP, MODAL].contains(&second.as_str()),
        "the desktop's replies, 250 ms ahead, lost to {second}"
    );
    desktop.stop().await;
}
