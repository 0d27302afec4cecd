//! The listener (`daemon::listener::run`): what each frame gets back, and
//! how an item waiting on the operator settles.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hark_core::bridge::client::{Call, ClientError, Feed, Started, request};
use hark_core::bridge::wire::{
    Caller, ClientFrame, ErrorCode, FeedEvent, MAX_FRAME, ServerFrame, WireReply, read_frame,
};
use hark_core::model::approval::{Approval, DecidedBy, Scope, Verdict};
use hark_core::model::ids::{Clock, Ids, ItemId};
use hark_core::model::item::ItemFilter;
use hark_core::model::item::{Item, Outcome, Surface};
use hark_core::model::resolve::Pick;
use hark_core::prompter::script::{Scripted, ScriptedPrompter};
use hark_core::registry::Event;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::support::{
    DEFAULT_TIMEOUT, RUN, Raw, Served, ask, db, list, operator, picked, question, stored, wire,
};

/// The outcome an agent gets when the operator picked SQLite.
fn sqlite() -> Value {
    json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
}

/// The next settlement the registry announces.
async fn settled(events: &mut broadcast::Receiver<Event>) -> (Arc<Item>, Outcome) {
    loop {
        if let Event::Settled { item, outcome, .. } = events.recv().await.unwrap() {
            return (item, outcome);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_ask_answered_by_the_prompter_returns_the_answer() {
    let script = HashMap::from([(
        "Which database?".to_owned(),
        Scripted::Pick(Pick::Label("SQLite".into())),
    )]);
    let served = Served::start(ScriptedPrompter::new(script));
    let mut call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    assert_eq!(call.timeout, DEFAULT_TIMEOUT);
    let outcome = call.outcome().await.unwrap();
    assert_eq!(wire(&outcome), sqlite());

    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.outcome, Some(outcome));
    assert_eq!(record.replied_by.as_deref(), Some("script"));
    assert_eq!(record.session_id, "s1");
}

#[tokio::test(start_paused = true)]
async fn a_malformed_ask_is_refused_with_every_issue_and_nobody_is_asked() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut raw = Raw::connect(&served.socket).await;
    let lonely = question("Only one?", "A header far too long to show", &["A"]);
    raw.send(&json!({"type": "ask", "session_id": "s1", "request": {"questions": [lonely]}}))
        .await;
    let refusal = raw.next().await.unwrap();
    assert_eq!(refusal["type"], "error");
    assert_eq!(refusal["code"], "invalid");
    assert_eq!(refusal["message"], "the ask call is malformed");
    let paths: Vec<&str> = refusal["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["questions[0].header", "questions[0].options"],
        "{refusal}"
    );
    assert_eq!(raw.next().await, None, "the connection is closed after");

    assert!(list(&served.socket, ItemFilter::default()).await.is_empty());
    assert!(prompts.try_recv().is_err(), "the operator was not asked");
}

#[tokio::test(start_paused = true)]
async fn a_frame_that_is_not_hark_is_a_bad_frame() {
    let served = Served::start(operator().0);
    for frame in [json!({"type": "launch"}), json!({"type": "cancel"})] {
        let mut raw = Raw::connect(&served.socket).await;
        raw.send(&frame).await;
        let refusal = raw.next().await.unwrap();
        assert_eq!(refusal["type"], "error", "{frame}");
        assert_eq!(refusal["code"], "bad_frame", "{frame}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_reply_from_a_second_client_settles_the_item_and_a_second_reply_is_not_pending() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let mut prompt = prompts.recv().await.unwrap();
    assert_eq!(prompt.item.id, call.id);

    let id = call.id;
    let reply = |label: &str| ClientFrame::Reply {
        id,
        reply: WireReply::Answer {
            answers: picked("Which database?", label),
            notes: Default::default(),
        },
        via: None,
    };
    // A misfit is refused with its issues beside the message, said once.
    let misfit = request(&served.socket, &reply("Mongo")).await.unwrap();
    let ServerFrame::Error(refusal) = misfit else {
        panic!("a label not offered was taken: {misfit:?}");
    };
    assert_eq!(refusal.code, ErrorCode::Invalid);
    assert_eq!(refusal.message, "the answers do not fit the questions");
    assert_eq!(refusal.issues.len(), 1, "{:?}", refusal.issues);
    assert!(
        refusal.issues[0].message.contains("Mongo"),
        "{:?}",
        refusal.issues
    );

    let replied = request(&served.socket, &reply("SQLite")).await.unwrap();
    assert_eq!(
        wire(&replied),
        json!({"type": "replied", "id": call.id, "outcome": sqlite()})
    );
    assert_eq!(wire(call.outcome().await.unwrap()), sqlite());
    // The operator's prompt is withdrawn: the item settled elsewhere.
    prompt.dropped().await;

    let again = request(&served.socket, &reply("Postgres (Recommended)"))
        .await
        .unwrap();
    let ServerFrame::Error(refusal) = again else {
        panic!("a second reply was taken: {again:?}");
    };
    assert_eq!(refusal.code, ErrorCode::NotPending);

    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.outcome.map(wire), Some(sqlite()));
    assert_eq!(record.replied_by.as_deref(), Some("cli"));
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_sees_the_item_added_then_settled() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let mut feed = Feed::open(&served.socket, &ClientFrame::Subscribe)
        .await
        .unwrap();
    let mut call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();

    let ServerFrame::Event { event, item } = feed.next().await.unwrap() else {
        panic!("not an event");
    };
    assert_eq!(
        (event, item.id, item.outcome),
        (FeedEvent::Added, call.id, None)
    );
    assert_eq!(item.request.questions[0].question, "Which database?");

    let skip = ClientFrame::Reply {
        id: call.id,
        reply: WireReply::Skip,
        via: None,
    };
    request(&served.socket, &skip).await.unwrap();
    let skipped = json!({"outcome": "skipped",
        "unconfirmed_defaults": {"Which database?": "Postgres (Recommended)"}});
    assert_eq!(wire(call.outcome().await.unwrap()), skipped);
    let settled = loop {
        let ServerFrame::Event { event, item } = feed.next().await.unwrap() else {
            panic!("not an event");
        };
        assert_eq!(item.id, call.id);
        match event {
            // Subscribing and listing may both catch an item asked meanwhile.
            FeedEvent::Added => continue,
            FeedEvent::Parked => panic!("an item that does not park parked"),
            FeedEvent::Settled => break item,
        }
    };
    assert_eq!(settled.outcome.map(wire), Some(skipped));
    assert_eq!(settled.replied_by.as_deref(), Some("cli"));
}

#[tokio::test(start_paused = true)]
async fn a_cancel_settles_the_item_cancelled_and_withdraws_the_prompt() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let mut prompt = prompts.recv().await.unwrap();
    call.cancel().await.unwrap();
    let outcome = call.outcome().await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Cancelled {
            reason: "the agent cancelled the call".into()
        }
    );
    prompt.dropped().await;
    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.outcome, Some(outcome));
    assert_eq!(record.replied_by, None);
}

#[tokio::test(start_paused = true)]
async fn a_hang_up_cancels_the_item() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut events = served.registry().subscribe();
    let call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let id = call.id;
    let mut prompt = prompts.recv().await.unwrap();
    drop(call);
    let (item, outcome) = settled(&mut events).await;
    assert_eq!(item.id, id);
    assert_eq!(
        outcome,
        Outcome::Cancelled {
            reason: "the agent went away".into()
        }
    );
    prompt.dropped().await;
    assert_eq!(stored(&served.socket, id).await.outcome, Some(outcome));
}

#[tokio::test(start_paused = true)]
async fn shutdown_cancels_pending_items_and_the_waiting_client_gets_its_outcome() {
    let (operator, mut prompts) = operator();
    let mut served = Served::start(operator);
    let mut call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let _prompt = prompts.recv().await.unwrap();

    let stopping = Instant::now();
    served.stop().await;
    // Every connection ended with its outcome: none was left to the drain timeout.
    assert!(stopping.elapsed() < Duration::from_secs(1));
    let outcome = call.outcome().await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Cancelled {
            reason: "hark is shutting down".into()
        }
    );
    let store = served.registry().store().unwrap();
    let records = store.list(&ItemFilter::default()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Some(outcome));

    let late = Call::start(&served.socket, &ask("s1", db())).await;
    assert!(
        matches!(late, Err(ClientError::Unreachable { .. })),
        "{late:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_question_times_out_at_its_deadline_and_not_before() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let mut frame = ask("s1", db());
    frame.caller_mut().unwrap().timeout_secs = Some(30.0);
    let asked = Instant::now();
    let mut call = Call::start(&served.socket, &frame).await.unwrap();
    assert_eq!(call.timeout, Duration::from_secs(30), "the call's own wait");
    let _prompt = prompts.recv().await.unwrap();

    tokio::time::advance(Duration::from_millis(29_999)).await;
    let pending = ItemFilter {
        pending: Some(true),
        ..ItemFilter::default()
    };
    let waiting = list(&served.socket, pending).await;
    assert_eq!(
        waiting.iter().map(|r| r.id).collect::<Vec<_>>(),
        [call.id],
        "still pending a millisecond before its deadline"
    );

    let outcome = call.outcome().await.unwrap();
    assert_eq!(outcome, Outcome::TimedOut { after_ms: 30_000 });
    assert_eq!(asked.elapsed(), Duration::from_secs(30));
    assert_eq!(stored(&served.socket, call.id).await.outcome, Some(outcome));
}

/// An approve frame from session `s1` of `run-1`.
fn approve(tool: &str, input: Value) -> ClientFrame {
    ClientFrame::Approve {
        caller: Caller {
            session_id: Some("s1".into()),
            run_id: Some(RUN),
            ..Caller::default()
        },
        tool_name: tool.into(),
        input,
    }
}

#[tokio::test(start_paused = true)]
async fn an_approve_of_a_read_only_tool_is_decided_by_the_policy() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let read = approve("Read", json!({"file_path": "/etc/hosts"}));
    let started = Call::start_any(&served.socket, &read).await.unwrap();
    let Started::Decided { allow, scope, by } = started else {
        panic!("a read waits on the operator: {started:?}");
    };
    assert_eq!((allow, scope, by), (true, None, DecidedBy::Policy));
    assert!(list(&served.socket, ItemFilter::default()).await.is_empty());
    assert!(prompts.try_recv().is_err(), "the operator was not asked");
}

#[tokio::test(start_paused = true)]
async fn a_write_waits_on_the_operator_and_its_grant_decides_the_next_one() {
    let (operator, mut prompts) = operator();
    let served = Served::start(operator);
    let edit = |new: &str| {
        approve(
            "Edit",
            json!({"file_path": "/src/lib.rs", "old_string": "a", "new_string": new}),
        )
    };
    let Started::Pending(mut call) = Call::start_any(&served.socket, &edit("b")).await.unwrap()
    else {
        panic!("a write was decided without the operator");
    };
    let prompt = prompts.recv().await.unwrap();
    assert_eq!(prompt.item.id, call.id);
    let approval = prompt.item.approval.clone().expect("an approval");
    assert_eq!(
        (approval.tool.as_str(), approval.target.as_str()),
        ("Edit", "/src/lib.rs")
    );
    let question = prompt.item.request.questions[0].question.clone();
    let allow = Approval::label_of(Verdict::Allow(Scope::Turn));
    prompt.answer(Ok(picked(&question, allow)));
    let outcome = call.outcome().await.unwrap();
    assert_eq!(outcome, Outcome::Approved { scope: Scope::Turn });
    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.outcome, Some(outcome));
    assert_eq!(record.replied_by.as_deref(), Some(Surface::Terminal.name()));

    let next = Call::start_any(&served.socket, &edit("c")).await.unwrap();
    let Started::Decided { allow, scope, by } = next else {
        panic!("the grant for the run did not cover the next edit: {next:?}");
    };
    assert_eq!(
        (allow, scope, by),
        (true, Some(Scope::Turn), DecidedBy::Grant)
    );
}

#[tokio::test(start_paused = true)]
async fn a_frame_over_the_limit_is_refused() {
    let served = Served::start(operator().0);
    let (reader, mut writer) = UnixStream::connect(&served.socket)
        .await
        .unwrap()
        .into_split();
    // One byte over, with no newline: the server must stop reading at the limit.
    let flood = async move {
        let _ = writer.write_all(&vec![b'x'; MAX_FRAME + 1]).await;
        writer
    };
    let refusal = async {
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::new();
        assert!(read_frame(&mut reader, &mut buf).await.unwrap());
        serde_json::from_slice::<Value>(&buf).unwrap()
    };
    let (_writer, refusal) = tokio::join!(flood, refusal);
    assert_eq!(
        refusal,
        json!({"type": "error", "code": "frame_too_large",
            "message": format!("the call exceeds the {MAX_FRAME} byte frame limit")})
    );
    // The listener goes on serving.
    assert!(list(&served.socket, ItemFilter::default()).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_connection_from_the_owner_passes_the_peer_check() {
    let served = Served::start(operator().0);
    let mut raw = Raw::connect(&served.socket).await;
    // A foreign peer is refused (`forbidden`) before its frame is read; the
    // owner's frame is served.
    raw.send(&json!({"type": "list"})).await;
    assert_eq!(
        raw.next().await,
        Some(json!({"type": "items", "items": []}))
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_on_the_socket_is_the_command_lines_whatever_the_client_claims() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    // An old client's reply frame named its own surface; the daemon decides.
    let mut raw = Raw::connect(&served.socket).await;
    raw.send(
        &json!({"type": "reply", "id": call.id, "surface": "desktop",
        "reply": {"action": "answer", "answers": {"Which database?": "SQLite"}}}),
    )
    .await;
    let replied = raw.next().await.unwrap();
    assert_eq!(replied["type"], "replied", "{replied}");
    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.replied_by.as_deref(), Some(Surface::Cli.name()));
}

#[tokio::test(start_paused = true)]
async fn items_take_their_ids_and_times_from_the_daemons_sources() {
    let asked_at = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let (operator, mut prompts) = operator();
    let served = Served::start_with(operator, |daemon| {
        daemon.ids = Ids::sequence();
        daemon.clock = Clock::ticking_from(asked_at);
    });
    let call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let prompt = prompts.recv().await.unwrap();
    assert_eq!(call.id, ItemId(uuid::Uuid::from_u128(1)));
    assert_eq!(prompt.item.created_at, asked_at);
    let record = stored(&served.socket, call.id).await;
    assert_eq!(record.created_ms, 1_700_000_000_000);
    assert_eq!(
        record.deadline_ms,
        1_700_000_000_000 + DEFAULT_TIMEOUT.as_millis() as u64
    );
}
