//! What a stuck or hostile local client cannot do to the daemon: hold a
//! connection open without sending its frame (the first or any later one),
//! or take every file handle. What it may do: idle between frames.

use hark_core::daemon::listener::{FIRST_FRAME, FRAME_DEADLINE, PER_PROCESS};
use hark_core::model::item::Outcome;
use hark_core::registry::Event;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::support::{DEFAULT_TIMEOUT, Raw, Served, ask, db, operator, picked, wire};

#[tokio::test(start_paused = true)]
async fn a_frame_left_unfinished_is_dropped_at_its_deadline() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let mut raw = Raw::connect(&served.socket).await;
    raw.writer.write_all(b"{\"type\":\"ask\",").await.unwrap();
    let started = tokio::time::Instant::now();
    let refusal = tokio::time::timeout(FIRST_FRAME * 2, raw.next())
        .await
        .expect("the unfinished frame is not held past its deadline")
        .expect("the daemon says why it hangs up");
    assert_eq!(refusal["type"], "error", "{refusal}");
    assert_eq!(refusal["code"], "bad_frame", "{refusal}");
    assert_eq!(started.elapsed(), FIRST_FRAME);
    assert_eq!(raw.next().await, None, "and closes the connection");

    // The daemon still serves a well-formed ask.
    let mut asker = Raw::connect(&served.socket).await;
    asker.send(&wire(ask("s1", db()))).await;
    assert_eq!(asker.next().await.unwrap()["type"], "accepted");
}

#[tokio::test(start_paused = true)]
async fn an_asker_whose_next_frame_stalls_is_dropped_and_its_ask_cancelled() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut events = served.registry().subscribe();
    let mut asker = Raw::connect(&served.socket).await;
    asker.send(&wire(ask("s1", db()))).await;
    let accepted = asker.next().await.unwrap();
    assert_eq!(accepted["type"], "accepted", "{accepted}");
    let mut prompt = prompts.recv().await.unwrap();

    asker.writer.write_all(b"{\"type\":\"can").await.unwrap();
    let started = tokio::time::Instant::now();
    let closed = tokio::time::timeout(FRAME_DEADLINE * 2, asker.next())
        .await
        .expect("the stalled frame is not held past its deadline");
    assert_eq!(closed, None, "the connection is closed");
    assert_eq!(started.elapsed(), FRAME_DEADLINE);

    // The ask is settled at once, cancelled, and the prompt withdrawn.
    let settled = loop {
        if let Event::Settled { item, outcome, .. } = events.recv().await.unwrap() {
            break (item.id, outcome);
        }
    };
    assert_eq!(settled.0.to_string(), accepted["id"].as_str().unwrap());
    assert!(
        matches!(&settled.1, Outcome::Cancelled { reason } if reason.contains("stalled")),
        "{:?}",
        settled.1
    );
    prompt.dropped().await;
    assert_eq!(started.elapsed(), FRAME_DEADLINE, "well before its timeout");
}

#[tokio::test(start_paused = true)]
async fn a_follower_whose_next_frame_stalls_is_dropped() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let mut follower = Raw::connect(&served.socket).await;
    follower.send(&json!({"type": "subscribe"})).await;
    follower.writer.write_all(b"{\"type\":").await.unwrap();
    let started = tokio::time::Instant::now();
    let closed = tokio::time::timeout(FRAME_DEADLINE * 2, follower.next())
        .await
        .expect("the stalled frame is not held past its deadline");
    assert_eq!(closed, None, "the connection is closed");
    assert_eq!(started.elapsed(), FRAME_DEADLINE);
}

#[tokio::test(start_paused = true)]
async fn connections_idle_between_frames_stay_open() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut follower = Raw::connect(&served.socket).await;
    follower.send(&json!({"type": "subscribe"})).await;
    let mut asker = Raw::connect(&served.socket).await;
    asker.send(&wire(ask("s1", db()))).await;
    assert_eq!(asker.next().await.unwrap()["type"], "accepted");
    assert_eq!(follower.next().await.unwrap()["event"], "added");
    let prompt = prompts.recv().await.unwrap();

    // Both idle for many deadlines (and less than the ask's timeout).
    let idle = FRAME_DEADLINE * 6;
    assert!(idle < DEFAULT_TIMEOUT);
    let quiet = tokio::time::timeout(idle, follower.next()).await;
    assert!(quiet.is_err(), "the follower is still followed: {quiet:?}");

    // Then the operator answers: the asker gets it, the follower sees it.
    prompt.answer(Ok(picked("Which database?", "SQLite")));
    let settled = asker.next().await.expect("the asker's connection is open");
    assert_eq!(settled["type"], "settled", "{settled}");
    assert_eq!(settled["outcome"]["outcome"], "answered", "{settled}");
    let seen = follower
        .next()
        .await
        .expect("the follower's connection is open");
    assert_eq!(seen["event"], "settled", "{seen}");
}

// Real time: the connections are idle, and paused time would jump to their
// deadline while the test waits on the sockets.
#[tokio::test]
async fn one_process_cannot_hold_every_connection() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let mut held = Vec::new();
    for _ in 0..PER_PROCESS {
        held.push(Raw::connect(&served.socket).await);
    }
    let mut crowd = Raw::connect(&served.socket).await;
    let refusal = tokio::time::timeout(std::time::Duration::from_secs(10), crowd.next())
        .await
        .expect("the one too many is refused, not served")
        .expect("the one too many is told why");
    assert_eq!(refusal["code"], "unavailable", "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains(&PER_PROCESS.to_string()),
        "{refusal}"
    );

    // Closing one makes room again.
    drop(held.pop());
    let frame = json!({"type": "list_sessions"});
    // The daemon counts a connection until its task has seen the close, so
    // the first tries may still be refused.
    let retry = async {
        loop {
            let mut again = Raw::connect(&served.socket).await;
            again.send(&frame).await;
            let reply = again.next().await.unwrap();
            if reply["type"] != "error" {
                break reply;
            }
        }
    };
    let answered = tokio::time::timeout(std::time::Duration::from_secs(20), retry)
        .await
        .expect("a closed connection makes room again");
    assert_eq!(answered["type"], "sessions", "{answered}");
}
