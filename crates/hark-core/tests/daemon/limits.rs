//! What a stuck or hostile local client cannot do to the daemon: hold a
//! connection open without sending its frame, or take every file handle.

use hark_core::daemon::listener::{FIRST_FRAME, PER_PROCESS};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::support::{Raw, Served, ask, db, operator, wire};

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
