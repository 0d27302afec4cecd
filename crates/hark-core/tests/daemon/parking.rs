//! Items that park: an ask from a tool use that can be resumed parks at the
//! end of its wait instead of timing out; the paused run waits for it with
//! `await`; the resumed tool use's calls get its outcome, and no new item.

use std::time::Duration;

use hark_core::bridge::client::{Call, request};
use hark_core::bridge::views::ItemState;
use hark_core::bridge::wire::{Caller, ClientFrame, ErrorCode, ServerFrame};
use hark_core::model::item::{ItemFilter, Outcome};
use hark_core::registry::Waited;
use serde_json::json;

use crate::support::*;

/// The ask of tool use `tool_use_id`, from a hook (`parks`) or from the
/// MCP call that follows it.
fn tool_use_ask(tool_use_id: &str, parks: bool) -> ClientFrame {
    ClientFrame::Ask {
        caller: Caller {
            session_id: Some("s1".into()),
            timeout_secs: Some(1.0),
            tool_use_id: Some(tool_use_id.into()),
            parks,
            ..Caller::default()
        },
        request: json!({ "questions": [db()] }),
    }
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_ask_parks_and_its_tool_use_gets_the_answer_when_it_comes() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut hook = Call::start(&served.socket, &tool_use_ask("toolu_1", true))
        .await
        .unwrap();
    let prompt = prompts.recv().await.unwrap();
    assert_eq!(hook.wait().await.unwrap(), Waited::Parked);
    drop(hook);

    // Parked: still waiting for the operator, with no timeout, and still in
    // front of them.
    tokio::time::advance(Duration::from_secs(3 * 3600)).await;
    let record = stored(&served.socket, prompt.item.id).await;
    assert_eq!(record.state, ItemState::Parked);
    assert!(record.outcome.is_none() && record.parked_ms.is_some());

    // The paused run waits for it; the operator answers hours later.
    let socket = served.socket.clone();
    let waiting = tokio::spawn(async move {
        let frame = ClientFrame::Await {
            tool_use_id: "toolu_1".into(),
            session_id: "s1".into(),
        };
        request(&socket, &frame).await.unwrap()
    });
    tokio::task::yield_now().await;
    prompt.answer(Ok(picked("Which database?", "SQLite")));
    let ServerFrame::Settled { id, outcome } = waiting.await.unwrap() else {
        panic!("the paused run heard no outcome");
    };
    assert_eq!(id, record.id);
    let Outcome::Answered(resolution) = &outcome else {
        panic!("not answered: {outcome:?}")
    };
    assert_eq!(
        wire(&resolution.answers),
        json!({"Which database?": "SQLite"})
    );

    // The resumed agent's hook, then its call, get that outcome at once.
    for parks in [true, false] {
        let mut again = Call::start(&served.socket, &tool_use_ask("toolu_1", parks))
            .await
            .unwrap();
        assert_eq!(again.id, record.id, "the same item, not a new one");
        assert_eq!(
            again.wait().await.unwrap(),
            Waited::Settled(outcome.clone())
        );
    }
    let all = list(&served.socket, ItemFilter::default()).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].state, ItemState::Settled);

    // Another tool use is nobody's, and this one is nobody else's: another
    // session gets neither its outcome nor a wait on it.
    for (tool_use_id, session_id) in [("toolu_2", "s1"), ("toolu_1", "s2")] {
        let unknown = ClientFrame::Await {
            tool_use_id: tool_use_id.into(),
            session_id: session_id.into(),
        };
        let ServerFrame::Error(refusal) = request(&served.socket, &unknown).await.unwrap() else {
            panic!("{tool_use_id} of {session_id} was awaited");
        };
        assert_eq!(refusal.code, ErrorCode::NotFound);
    }
    let other = ClientFrame::Ask {
        caller: Caller {
            session_id: Some("s2".into()),
            tool_use_id: Some("toolu_1".into()),
            ..Caller::default()
        },
        request: json!({ "questions": [db()] }),
    };
    let stranger = Call::start(&served.socket, &other).await.unwrap();
    assert_ne!(
        stranger.id, record.id,
        "another session's call is a new item"
    );
}

#[tokio::test(start_paused = true)]
async fn a_parked_item_asked_again_before_it_is_answered_parks_the_agent_again() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut hook = Call::start(&served.socket, &tool_use_ask("toolu_1", true))
        .await
        .unwrap();
    let _prompt = prompts.recv().await.unwrap();
    assert_eq!(hook.wait().await.unwrap(), Waited::Parked);
    let mut again = Call::start(&served.socket, &tool_use_ask("toolu_1", true))
        .await
        .unwrap();
    assert_eq!(again.id, hook.id);
    assert_eq!(again.wait().await.unwrap(), Waited::Parked);
    assert_eq!(list(&served.socket, ItemFilter::default()).await.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_ask_that_does_not_park_times_out_as_before() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut call = Call::start(&served.socket, &tool_use_ask("toolu_1", false))
        .await
        .unwrap();
    let _prompt = prompts.recv().await.unwrap();
    assert_eq!(
        call.wait().await.unwrap(),
        Waited::Settled(Outcome::TimedOut { after_ms: 1000 })
    );
}
