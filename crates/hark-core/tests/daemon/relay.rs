//! The relay (`bridge::relay::Relay`): a run's own socket, whose ask and
//! approve calls reach the app socket filed under the run.

use std::time::Duration;

use hark_core::bridge::client::{Call, ClientError, Started, request};
use hark_core::bridge::relay::Relay;
use hark_core::bridge::wire::{Caller, ClientFrame, ErrorCode, ServerFrame, WireReply};
use hark_core::model::approval::{Approval, Verdict};
use hark_core::model::item::ItemFilter;
use hark_core::model::item::Outcome;
use hark_core::registry::Event;
use serde_json::json;

use hark_core::model::ids::RunId;

use crate::support::{RUN, Raw, Served, ask, db, operator, picked, stored, wire};

/// A relay for run `run-1` of session `run-session`, to `served`.
fn relay(served: &Served) -> Relay {
    Relay::start(served.socket.clone(), RUN, "run-session".into()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_ask_on_a_runs_socket_is_filed_under_the_run_and_its_answer_comes_back() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let relay = relay(&served);
    // The agent's own claims about its run and session are overwritten;
    // the rest of the caller passes as it is.
    let mut frame = ask("agent-says", db());
    let caller = frame.caller_mut().unwrap();
    caller.run_id = Some(RunId(uuid::Uuid::from_u128(99)));
    caller.asker.pid = Some(4242);
    caller.timeout_secs = Some(60.0);

    let mut call = Call::start(&relay.socket, &frame).await.unwrap();
    assert_eq!(call.timeout, Duration::from_secs(60));
    let prompt = prompts.recv().await.unwrap();
    assert_eq!(prompt.item.id, call.id);
    assert_eq!(prompt.item.run_id, Some(RUN));
    assert_eq!(prompt.item.session_id, "run-session");
    assert_eq!(prompt.item.asker.pid, Some(4242));

    prompt.answer(Ok(picked("Which database?", "SQLite")));
    let outcome = call.outcome().await.unwrap();
    assert_eq!(
        wire(&outcome),
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
    );
    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.run_id, Some(RUN));
    assert_eq!(record.session_id, "run-session");
    assert_eq!(record.outcome, Some(outcome));
}

#[tokio::test(start_paused = true)]
async fn an_approve_on_a_runs_socket_is_filed_under_the_run() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let relay = relay(&served);
    let frame = ClientFrame::Approve {
        caller: Caller::default(),
        tool_name: "Write".into(),
        input: json!({"file_path": "/src/new.rs", "content": "fn main() {}"}),
    };
    let Started::Pending(mut call) = Call::start_any(&relay.socket, &frame).await.unwrap() else {
        panic!("a write was decided without the operator");
    };
    let prompt = prompts.recv().await.unwrap();
    assert_eq!(prompt.item.run_id, Some(RUN));
    assert_eq!(prompt.item.session_id, "run-session");
    let question = prompt.item.request.questions[0].question.clone();
    prompt.answer(Ok(picked(&question, Approval::label_of(Verdict::Deny))));
    assert_eq!(call.outcome().await.unwrap(), Outcome::Denied);
}

#[tokio::test(start_paused = true)]
async fn a_cancel_right_after_the_ask_is_carried_to_the_app() {
    let served = Served::start(operator().0);
    let relay = relay(&served);
    let mut raw = Raw::connect(&relay.socket).await;
    // Both frames in one write: the relay reads them together.
    let ask = serde_json::to_string(&ask("s1", db())).unwrap();
    let both = format!("{ask}\n{}\n", json!({"type": "cancel"}));
    tokio::io::AsyncWriteExt::write_all(&mut raw.writer, both.as_bytes())
        .await
        .unwrap();
    let accepted = raw.next().await.unwrap();
    assert_eq!(accepted["type"], "accepted");
    let settled = raw.next().await.unwrap();
    assert_eq!(
        settled,
        json!({"type": "settled", "id": accepted["id"],
            "outcome": {"outcome": "cancelled", "reason": "the agent cancelled the call"}})
    );
}

#[tokio::test(start_paused = true)]
async fn an_agent_hanging_up_on_its_runs_socket_cancels_the_item() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let relay = relay(&served);
    let mut events = served.registry().subscribe();
    let call = Call::start(&relay.socket, &ask("s1", db())).await.unwrap();
    let id = call.id;
    let mut prompt = prompts.recv().await.unwrap();
    drop(call);
    let outcome = loop {
        if let Event::Settled { item, outcome, .. } = events.recv().await.unwrap() {
            assert_eq!(item.id, id);
            break outcome;
        }
    };
    assert_eq!(
        outcome,
        Outcome::Cancelled {
            reason: "the agent went away".into()
        }
    );
    prompt.dropped().await;
}

#[tokio::test(start_paused = true)]
async fn a_runs_socket_takes_only_ask_and_approve_calls() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let relay = relay(&served);
    // An item the agent would like to answer itself.
    let call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let refused = [
        ClientFrame::Reply {
            id: call.id,
            reply: WireReply::Answer {
                answers: picked("Which database?", "SQLite"),
                notes: Default::default(),
            },
            via: None,
        },
        ClientFrame::List {
            filter: ItemFilter::default(),
        },
        ClientFrame::Subscribe,
        ClientFrame::ClearSettled,
    ];
    for frame in refused {
        let answer = request(&relay.socket, &frame).await.unwrap();
        let ServerFrame::Error(refusal) = answer else {
            panic!("{frame:?} passed the run's socket: {answer:?}");
        };
        assert_eq!(refusal.code, ErrorCode::BadFrame);
        assert_eq!(
            refusal.message,
            "a run's socket only takes ask and approve calls"
        );
    }
    let mut raw = Raw::connect(&relay.socket).await;
    raw.send(&json!({"type": "launch"})).await;
    assert_eq!(raw.next().await.unwrap()["code"], "bad_frame");
    assert!(
        served.registry().get(call.id).is_some(),
        "the item is still pending"
    );
}

#[tokio::test(start_paused = true)]
async fn with_no_operator_a_runs_socket_hangs_up_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(dir.path().join("hark.sock"), RUN, "s".into()).unwrap();
    let started = Call::start(&relay.socket, &ask("s1", db())).await;
    assert!(
        matches!(started, Err(ClientError::Unreachable { .. })),
        "{started:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_relay_removes_its_socket_and_directory() {
    let served = Served::start(operator().0);
    let relay = relay(&served);
    let (dir, socket) = (relay.dir.path().to_owned(), relay.socket.clone());
    assert!(socket.exists());
    drop(relay);
    assert!(!dir.exists());
    let started = Call::start(&socket, &ask("s1", db())).await;
    assert!(
        matches!(started, Err(ClientError::Unreachable { .. })),
        "{started:?}"
    );
}
