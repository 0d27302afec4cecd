//! The inbox that loses nothing: the store through the real binary, one set
//! of reply rules for every surface, the feed, and the terminal surface.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use crate::support::*;
use serde_json::{Value, json};

/// Starts `hark ask` in the background against the daemon.
pub(crate) fn ask_in_background(daemon: &Daemon, session: &str, qs: Value) -> std::process::Child {
    ask_in_background_in(&daemon.sandbox, session, qs)
}

/// `hark ask` of `qs` as `session` in `sandbox`, in the background; its
/// stdout is piped.
pub(crate) fn ask_in_background_in(
    sandbox: &Sandbox,
    session: &str,
    qs: Value,
) -> std::process::Child {
    let file = sandbox.path(format!("{session}.json"));
    std::fs::write(&file, qs.to_string()).unwrap();
    sandbox
        .hark(["ask", "--session", session, "--file"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Asks the database question as `session` and waits for the script's answer.
fn ask_answered(daemon: &Daemon, session: &str) {
    let asker = ask_in_background(daemon, session, questions(&[db()]));
    assert!(asker.wait_with_output().unwrap().status.success());
}

/// Ends a background asker that is no longer needed.
fn reap(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn by_session<'a>(items: &'a [Value], session: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["session_id"] == session)
        .unwrap_or_else(|| panic!("no item of {session} in {items:?}"))
}

/// Sends one raw frame to the daemon and reads one frame back.
fn exchange(daemon: &Daemon, frame: Value) -> Value {
    let mut stream = UnixStream::connect(daemon.sandbox.socket()).unwrap();
    stream.write_all(format!("{frame}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn a_killed_daemon_loses_no_settled_outcome_and_closes_out_pending_ones() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let answered = ask_in_background(&daemon, "answered", questions(&[db()]));
    assert!(answered.wait_with_output().unwrap().status.success());
    let mut waiting = ask_in_background(&daemon, "waiting", questions(&[features()]));
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "waiting")]);
    let before = inbox(&daemon.sandbox);

    let sandbox = daemon.kill9();
    // The asker's socket closed with the daemon: it got its error at once.
    let status = waiting.wait().unwrap();
    assert_ne!(status.code(), Some(0));

    let daemon = serve_in(&sandbox, json!({}), &[]);
    let after = inbox(&daemon.sandbox);
    assert_eq!(after.len(), 2);
    assert_eq!(
        by_session(&after, "answered"),
        by_session(&before, "answered")
    );
    assert_eq!(
        by_session(&after, "answered")["outcome"],
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
    );
    let closed = by_session(&after, "waiting");
    assert_eq!(
        closed["outcome"],
        json!({"outcome": "cancelled", "reason": "hark restarted before it was answered"})
    );
    assert_eq!(closed["request"], by_session(&before, "waiting")["request"]);
    let pending = hark(&daemon.sandbox, &["inbox", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&pending.stdout).unwrap(),
        json!([])
    );
}

#[test]
fn two_racing_replies_exactly_one_wins() {
    let daemon = serve(json!({}));
    let asker = ask_in_background(&daemon, "raced", questions(&[db()]));
    let id = daemon.log.question_id("raced");
    let racer = |label: &'static str| {
        let mut cmd = daemon
            .sandbox
            .hark(["answer", &id, "--json", "--pick", label]);
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (racer("SQLite"), racer("Postgres (Recommended)"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let codes = [a.status.code(), b.status.code()];
    assert!(
        codes.contains(&Some(0)) && codes.contains(&Some(2)),
        "exit codes {codes:?}"
    );
    let (winner, loser) = if a.status.success() { (a, b) } else { (b, a) };
    let won: Value = serde_json::from_slice(&winner.stdout).unwrap();
    let loser_says = String::from_utf8_lossy(&loser.stderr);
    assert!(
        loser_says.contains("is not pending") || loser_says.contains("already settled"),
        "{loser_says}"
    );
    let got: Value = serde_json::from_slice(&asker.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(
        got["answers"], won["outcome"]["answers"],
        "the asker got the winner's answer"
    );
    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["outcome"]["answers"], won["outcome"]["answers"]);
    assert_eq!(items[0]["replied_by"], "cli");
}

#[test]
fn a_verdict_on_a_question_set_is_refused_and_changes_nothing() {
    let daemon = serve(json!({}));
    let asker = ask_in_background(&daemon, "mismatch", questions(&[db()]));
    let asked = daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "mismatch")]);
    let before = inbox(&daemon.sandbox);
    let refused = exchange(
        &daemon,
        json!({"type": "reply", "id": asked["question_id"], "reply": {"action": "approve"}}),
    );
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "human_reply_mismatch");
    assert_eq!(inbox(&daemon.sandbox), before, "no row changed");
    assert!(before[0]["outcome"].is_null(), "still pending");
    reap(asker);
}

#[test]
fn defaults_and_skips_are_stored_as_what_they_were() {
    let daemon = serve(json!({}));
    let defaulted = ask_in_background(&daemon, "defaulted", questions(&[db(), features()]));
    let asked = daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "defaulted")]);
    let id = asked["question_id"].as_str().unwrap();
    let out = hark(&daemon.sandbox, &["answer", &id[..8], "--pick", "SQLite"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&defaulted.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(
        got["answers"],
        json!({"Which database?": "SQLite", "Which features?": ["Auth (Recommended)"]})
    );

    let skipped = ask_in_background(&daemon, "skipped", questions(&[db()]));
    let asked = daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "skipped")]);
    let out = hark(
        &daemon.sandbox,
        &["skip", asked["question_id"].as_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(skipped.wait_with_output().unwrap().status.code(), Some(3));

    let items = inbox(&daemon.sandbox);
    assert_eq!(
        by_session(&items, "defaulted")["outcome"],
        json!({"outcome": "answered",
               "answers": {"Which database?": "SQLite", "Which features?": ["Auth (Recommended)"]},
               "defaulted": ["Which features?"]})
    );
    assert_eq!(
        by_session(&items, "skipped")["outcome"],
        json!({"outcome": "skipped", "unconfirmed_defaults": {"Which database?": "Postgres (Recommended)"}})
    );
}

#[test]
fn a_late_subscriber_lists_what_it_missed_and_follows_the_rest() {
    let daemon = serve(json!({}));
    let asker = ask_in_background(&daemon, "late", questions(&[db()]));
    let id = daemon.log.question_id("late");

    let listed = exchange(
        &daemon,
        json!({"type": "list", "filter": {"pending": true}}),
    );
    assert_eq!(listed["items"][0]["id"], id.as_str());

    let mut feed = UnixStream::connect(daemon.sandbox.socket()).unwrap();
    feed.write_all(b"{\"type\":\"subscribe\"}\n").unwrap();
    let mut events = BufReader::new(feed.try_clone().unwrap()).lines();
    let mut next = || serde_json::from_str::<Value>(&events.next().unwrap().unwrap()).unwrap();
    let first = next();
    assert_eq!(
        (first["event"].as_str(), first["item"]["id"].as_str()),
        (Some("added"), Some(id.as_str()))
    );

    let out = hark(&daemon.sandbox, &["answer", &id, "--defaults"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settled = next();
    assert_eq!(settled["event"], "settled");
    assert_eq!(settled["item"]["id"], id.as_str());
    assert_eq!(
        settled["item"]["outcome"]["defaulted"],
        json!(["Which database?"])
    );
    assert_eq!(settled["item"]["replied_by"], "cli");
    reap(asker);
}

#[tokio::test(flavor = "multi_thread")]
async fn inbox_watch_shows_an_agents_question_and_hark_answer_settles_it() {
    let daemon = serve(json!({}));
    let mut watch = daemon
        .sandbox
        .hark(["inbox", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = Lines::follow("hark inbox --watch", watch.stdout.take().unwrap());
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "watched")]).await;
    let call = tokio::spawn({
        let peer = agent.peer().clone();
        async move {
            let Value::Object(args) = questions(&[db()]) else {
                unreachable!()
            };
            peer.call_tool(rmcp::model::CallToolRequestParams::new("ask").with_arguments(args))
                .await
                .unwrap()
        }
    });
    let added = seen.wait_for("the watched item", |l| {
        l.contains("\"added\"") && l.contains("watched")
    });
    let added: Value = serde_json::from_str(&added).unwrap();
    let id = added["item"]["id"].as_str().unwrap().to_owned();
    answer(&daemon.sandbox, &id, "SQLite");
    let result = call.await.unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);
    seen.wait_for("the settle event", |l| {
        l.contains("\"settled\"") && l.contains(&id)
    });
    let _ = watch.kill();
    let _ = watch.wait();
    agent.cancel().await.unwrap();
}

#[test]
fn clear_settled_empties_the_history_and_keeps_what_is_pending() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    ask_answered(&daemon, "done");
    let pending = ask_in_background(&daemon, "open", questions(&[features()]));
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "open")]);
    let out = hark(&daemon.sandbox, &["inbox", "--clear-settled", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({"removed": 1})
    );
    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["session_id"], "open");
    reap(pending);
}

#[test]
fn hark_sessions_sums_up_each_session_waiting_ones_first() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let waiting = ask_in_background(&daemon, "open", questions(&[features()]));
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "open")]);
    ask_answered(&daemon, "done");
    ask_answered(&daemon, "done");

    let out = hark(&daemon.sandbox, &["sessions", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = sessions
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["open", "done"], "waiting first, though asked first");
    assert_eq!(
        (&sessions[0]["items"], &sessions[0]["pending"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(sessions[0]["alive"], true, "its `hark ask` still waits");
    assert_eq!(
        (&sessions[1]["items"], &sessions[1]["pending"]),
        (&json!(2), &json!(0))
    );
    assert_eq!(sessions[1]["last_outcome"], "answered");
    assert_eq!(sessions[1]["alive"], false, "its `hark ask` has exited");
    assert_eq!(sessions[1]["asker"]["command"], "hark ask");

    let text = stdout(&hark(&daemon.sandbox, &["sessions"]));
    assert!(
        text.contains("WAITING   open — 1 item(s), 1 pending"),
        "{text}"
    );
    assert!(
        text.contains("ENDED     done — 2 item(s), 0 pending") && text.contains("last answered"),
        "{text}"
    );
    reap(waiting);
}

#[test]
fn answering_a_settled_or_unknown_item_says_why() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    ask_answered(&daemon, "done");
    let id = inbox(&daemon.sandbox)[0]["id"].as_str().unwrap().to_owned();
    let again = hark(
        &daemon.sandbox,
        &["answer", &id, "--pick", "Postgres (Recommended)"],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already settled (answered by script)")
    );
    let unknown = hark(&daemon.sandbox, &["skip", "ffffffff"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        inbox(&daemon.sandbox)[0]["outcome"]["answers"]["Which database?"],
        "SQLite"
    );
}

#[test]
fn an_empty_id_names_no_item_and_answers_nothing() {
    let daemon = serve(json!({}));
    let asker = ask_in_background(&daemon, "only", questions(&[db()]));
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "only")]);
    for args in [&["answer", "", "--pick", "SQLite"][..], &["skip", " "]] {
        let out = hark(&daemon.sandbox, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("an item id is required"), "{said}");
    }
    assert!(
        inbox(&daemon.sandbox)[0]["outcome"].is_null(),
        "still pending"
    );
    reap(asker);
}

#[test]
fn a_refused_answer_names_each_issue_once() {
    let daemon = serve(json!({}));
    let name = question("Name?", "Name", &["foo", "bar"], false);
    let asker = ask_in_background(&daemon, "refused", questions(&[db(), name]));
    let id = daemon.log.question_id("refused");
    let cases: [(&[&str], &str); 2] = [
        (
            &["--pick", "SQLite", "--pick", "Postgres (Recommended)"],
            "takes exactly one label",
        ),
        (
            &["--defaults"],
            "has no answer and the question has no default",
        ),
    ];
    for (words, issue) in cases {
        let mut args = vec!["answer", id.as_str()];
        args.extend(words);
        let out = hark(&daemon.sandbox, &args);
        assert_eq!(out.status.code(), Some(2), "{words:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(said.matches(issue).count(), 1, "{words:?}:\n{said}");
    }
    assert!(
        inbox(&daemon.sandbox)[0]["outcome"].is_null(),
        "still pending"
    );
    reap(asker);
}
