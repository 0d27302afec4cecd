//! The registry's rules, on paused time.

use super::*;
use crate::model::ids::Ids;
use crate::model::item::Asker;
use crate::model::resolve::Pick;
use crate::model::validate::{Rules, validate};
use serde_json::json;
use std::time::SystemTime;

fn item(timeout: Duration) -> Item {
    Item {
        id: Ids::random().item(),
        session_id: "s1".into(),
        run_id: None,
        asker: Asker::default(),
        request: validate(
            &json!({"questions": [{"question": "Go?", "header": "Go", "multiSelect": false,
                "options": [{"label": "Yes (Recommended)", "description": ""}, {"label": "No", "description": ""}]}]}),
            Rules::default(),
        )
        .unwrap(),
        approval: None,
        created_at: SystemTime::now(),
        timeout,
    }
}

#[tokio::test(start_paused = true)]
async fn an_item_times_out_at_its_deadline_and_not_before() {
    let registry = Registry::new();
    let mut pending = registry.open(item(Duration::from_secs(300)));
    let id = pending.item.id;
    tokio::time::advance(Duration::from_secs(299)).await;
    assert!(
        registry.get(id).is_some(),
        "still pending before the deadline"
    );
    let outcome = pending.outcome().await;
    assert_eq!(outcome, Outcome::TimedOut { after_ms: 300_000 });
    assert!(registry.get(id).is_none());
}

#[tokio::test(start_paused = true)]
async fn an_earlier_deadline_wakes_the_expiry_task() {
    let registry = Registry::new();
    let _long = registry.open(item(Duration::from_secs(3600)));
    let mut short = registry.open(item(Duration::from_secs(5)));
    assert_eq!(short.outcome().await, Outcome::TimedOut { after_ms: 5_000 });
    assert_eq!(registry.pending().len(), 1);
}

#[tokio::test]
async fn exactly_one_reply_wins() {
    let registry = Registry::new();
    let mut pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    let first = registry.reply(
        id,
        Reply::Answer(Picks::from([("Go?".into(), Pick::Label("No".into()))])),
        Surface::Cli,
    );
    assert!(matches!(first, Ok(Outcome::Answered(_))));
    assert_eq!(
        registry.reply(id, Reply::Skip, Surface::Cli),
        Err(ReplyError::NotPending(id))
    );
    assert!(!registry.cancel(id, "late"));
    let Outcome::Answered(resolution) = pending.outcome().await else {
        panic!()
    };
    assert_eq!(
        serde_json::to_value(resolution.answers).unwrap(),
        json!({"Go?": "No"})
    );
}

#[tokio::test]
async fn a_reply_that_does_not_fit_leaves_the_item_pending() {
    let registry = Registry::new();
    let pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    let refused = registry.reply(
        id,
        Reply::Answer(Picks::from([("Go?".into(), Pick::Label("Maybe".into()))])),
        Surface::Cli,
    );
    assert!(matches!(refused, Err(ReplyError::Invalid(_))));
    assert!(registry.get(id).is_some());
}

#[tokio::test]
async fn a_skip_names_the_unconfirmed_defaults() {
    let registry = Registry::new();
    let mut pending = registry.open(item(Duration::from_secs(60)));
    registry
        .reply(pending.item.id, Reply::Skip, Surface::Cli)
        .unwrap();
    let outcome = pending.outcome().await;
    assert_eq!(outcome.name(), "skipped");
    assert!(
        outcome
            .unanswered_message()
            .unwrap()
            .contains("Yes (Recommended)")
    );
}

#[tokio::test]
async fn a_verdict_on_a_question_set_is_a_mismatch_and_changes_nothing() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    assert!(matches!(events.recv().await, Ok(Event::Added(_))));
    let refused = registry.reply(id, Reply::Approve(None), Surface::Cli);
    assert!(matches!(
        refused,
        Err(ReplyError::HumanReplyMismatch { got: "approve", .. })
    ));
    assert!(registry.get(id).is_some());
    assert!(events.try_recv().is_err(), "nothing settled");
}

#[tokio::test]
async fn followers_see_items_added_and_settled() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let pending = registry.open(item(Duration::from_secs(60)));
    registry
        .reply(pending.item.id, Reply::Skip, Surface::Cli)
        .unwrap();
    assert!(matches!(events.recv().await, Ok(Event::Added(i)) if i.id == pending.item.id));
    let Ok(Event::Settled {
        outcome,
        replied_by,
        ..
    }) = events.recv().await
    else {
        panic!()
    };
    assert_eq!(outcome.name(), "skipped");
    assert_eq!(replied_by, Some(Surface::Cli));
}

#[tokio::test]
async fn dropping_the_asker_tears_the_entry_down() {
    let registry = Registry::new();
    let pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    drop(pending);
    assert!(registry.get(id).is_none());
    assert!(registry.pending().is_empty());
}

#[tokio::test]
async fn shutdown_cancels_everything_pending_and_refuses_new_items() {
    let registry = Registry::new();
    let mut a = registry.open(item(Duration::from_secs(60)));
    registry.shutdown("hark is quitting");
    assert_eq!(
        a.outcome().await,
        Outcome::Cancelled {
            reason: "hark is quitting".into()
        }
    );
    let mut b = registry.open(item(Duration::from_secs(60)));
    assert_eq!(b.outcome().await.name(), "cancelled");
}

#[test]
fn a_surfaces_pick_is_a_verdict_on_an_approval_and_answers_to_a_question_set() {
    let pick = |question: &str, label: &str| {
        Picks::from([(question.to_owned(), Pick::Label(label.to_owned()))])
    };
    let questions = item(Duration::from_secs(1));
    assert_eq!(
        Reply::from_picks(&questions, pick("Go?", "No")),
        Some(Reply::Answer(pick("Go?", "No")))
    );

    let approval = Approval {
        tool: "Write".into(),
        target: "/x".into(),
        preview: "+ x".into(),
        external: false,
    };
    let write = Item {
        request: approval.request(),
        approval: Some(approval),
        ..item(Duration::from_secs(1))
    };
    let asked = write.request.questions[0].question.clone();
    let label = |verdict| Approval::label_of(verdict);
    assert_eq!(
        Reply::from_picks(&write, pick(&asked, label(Verdict::Allow(Scope::Session)))),
        Some(Reply::Approve(Some(Scope::Session)))
    );
    assert_eq!(
        Reply::from_picks(&write, pick(&asked, label(Verdict::Deny))),
        Some(Reply::Deny)
    );
    // A label that is no verdict, or a pick on another question, is none.
    assert_eq!(Reply::from_picks(&write, pick(&asked, "Yes")), None);
    assert_eq!(Reply::from_picks(&write, pick("Go?", "Deny")), None);
}
