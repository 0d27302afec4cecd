//! The registry's rules, on paused time.

use super::*;
use crate::model::ids::Ids;
use crate::model::item::Asker;
use crate::model::item::ItemFilter;
use crate::model::resolve::Pick;
use crate::model::validate::{Rules, validate};
use serde_json::json;
use std::time::SystemTime;

pub(super) fn item(timeout: Duration) -> Item {
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
        parking: None,
        mirrored: false,
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
    let first = registry
        .reply(
            id,
            Reply::Answer(Picks::from([("Go?".into(), Pick::Label("No".into()))]).into()),
            Surface::Cli,
        )
        .await;
    assert!(matches!(first, Ok(Outcome::Answered(_))));
    assert_eq!(
        registry.reply(id, Reply::Skip, Surface::Cli).await,
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
    let refused = registry
        .reply(
            id,
            Reply::Answer(Picks::from([("Go?".into(), Pick::Label("Maybe".into()))]).into()),
            Surface::Cli,
        )
        .await;
    assert!(matches!(refused, Err(ReplyError::Invalid(_))));
    assert!(registry.get(id).is_some());
}

#[tokio::test]
async fn a_skip_names_the_unconfirmed_defaults() {
    let registry = Registry::new();
    let mut pending = registry.open(item(Duration::from_secs(60)));
    registry
        .reply(pending.item.id, Reply::Skip, Surface::Cli)
        .await
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
    let refused = registry.reply(id, Reply::Approve(None), Surface::Cli).await;
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
        .await
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
        Some(Reply::Answer(pick("Go?", "No").into()))
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

/// A registry on a store in a temp dir.
fn on_a_store() -> (tempfile::TempDir, Arc<Store>, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap());
    let registry = Registry::with_store(Some(store.clone()));
    (dir, store, registry)
}

/// An item too big for a store that cannot grow.
fn big_item() -> Item {
    Item {
        asker: Asker {
            command: Some("x".repeat(20_000)),
            ..Asker::default()
        },
        ..item(Duration::from_secs(600))
    }
}

fn answer_no() -> Reply {
    Reply::Answer(Picks::from([("Go?".into(), Pick::Label("No".into()))]).into())
}

/// The store's health events among what followers were sent so far.
fn health_events(events: &mut broadcast::Receiver<Event>) -> Vec<StoreHealth> {
    std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e {
            Event::StoreHealth(health) => Some(health),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_item_the_store_refuses_is_listed_answered_and_recorded_once_it_can() {
    let (_dir, store, registry) = on_a_store();
    let mut earlier = registry.open(item(Duration::from_secs(60)));
    registry
        .reply(earlier.item.id, Reply::Skip, Surface::Cli)
        .await
        .unwrap();
    earlier.outcome().await;
    let before = store.list(&ItemFilter::default()).unwrap();
    assert_eq!(registry.store_health().unwrap().error, None);
    let mut events = registry.subscribe();

    store.cap_growth(true);
    let mut held = registry.open(big_item());
    let id = held.item.id;
    assert_eq!(store.get(id).unwrap(), None, "the store took no row");
    let health = registry.store_health().unwrap();
    assert!(
        health.error.as_deref().unwrap().contains("full"),
        "{health:?}"
    );
    assert_eq!(
        (health.path.as_path(), health.unrecorded),
        (store.path(), 1)
    );
    assert_eq!(health_events(&mut events), [health]);

    // Listed as pending, and found by its id as `hark answer` looks it up.
    let list = |filter: ItemFilter| registry.list_as(&store, &filter, |r| r).unwrap();
    let pending = list(ItemFilter {
        pending: Some(true),
        ..ItemFilter::default()
    });
    assert_eq!(pending.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    assert_eq!(pending[0].asker, held.item.asker);
    let by_id = list(ItemFilter {
        id: Some(id),
        ..ItemFilter::default()
    });
    assert_eq!((by_id.len(), &by_id[0].outcome), (1, &None));

    // Answered, and the answer reaches the asker.
    registry.reply(id, answer_no(), Surface::Cli).await.unwrap();
    let Outcome::Answered(resolution) = held.outcome().await else {
        panic!("not answered")
    };
    assert_eq!(
        serde_json::to_value(resolution.answers).unwrap(),
        json!({"Go?": "No"})
    );
    let all = list(ItemFilter::default());
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].outcome.as_ref().map(Outcome::name), Some("answered"));
    assert_eq!(store.list(&ItemFilter::default()).unwrap(), before);
    assert_eq!(registry.store_health().unwrap().unrecorded, 2);

    // The disk frees: the item and its outcome are written, the health clears.
    store.cap_growth(false);
    let health = registry.store_health().unwrap();
    assert_eq!((health.error, health.unrecorded), (None, 0));
    let row = store.get(id).unwrap().expect("recorded");
    assert_eq!(row.outcome.as_ref().map(Outcome::name), Some("answered"));
    assert_eq!(row.replied_by.as_deref(), Some("cli"));
    assert_eq!(row.asker, held.item.asker);
    assert_eq!(list(ItemFilter::default()).len(), 2, "listed once");
    assert!(store.get(before[0].id).unwrap().as_ref() == Some(&before[0]));
    assert!(!health_events(&mut events)[0].is_failing());
}

#[tokio::test]
async fn an_outcome_the_store_refuses_is_listed_in_place_of_its_pending_row() {
    let (_dir, store, registry) = on_a_store();
    let mut pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    store.cap_growth(true);
    let long = Pick::Text {
        text: "y".repeat(20_000),
    };
    let reply = Reply::Answer(Picks::from([("Go?".into(), long)]).into());
    registry.reply(id, reply, Surface::Cli).await.unwrap();
    assert_eq!(pending.outcome().await.name(), "answered");
    assert_eq!(store.get(id).unwrap().unwrap().outcome, None);
    assert_eq!(registry.store_health().unwrap().unrecorded, 1);

    let waiting = ItemFilter {
        pending: Some(true),
        ..ItemFilter::default()
    };
    let listed = registry.list_as(&store, &waiting, |r| r).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].outcome.as_ref().map(Outcome::name),
        Some("answered")
    );

    store.cap_growth(false);
    assert!(!registry.store_health().unwrap().is_failing());
    assert_eq!(
        store
            .get(id)
            .unwrap()
            .unwrap()
            .outcome
            .as_ref()
            .map(Outcome::name),
        Some("answered")
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_store_is_tried_again_without_anyone_asking() {
    let (_dir, store, registry) = on_a_store();
    let mut events = registry.subscribe();
    store.cap_growth(true);
    let held = registry.open(big_item());
    store.cap_growth(false);
    // The retry task writes it within one retry: the paused clock runs
    // straight to it.
    let cleared = tokio::time::timeout(RETRY * 2, async {
        loop {
            if let Ok(Event::StoreHealth(health)) = events.recv().await
                && !health.is_failing()
            {
                return health;
            }
        }
    })
    .await
    .expect("the health cleared");
    assert_eq!(cleared.unrecorded, 0);
    assert!(store.get(held.item.id).unwrap().is_some());
}

#[tokio::test]
async fn mirrored_items_are_recorded_in_one_write_or_held_together_until_the_store_takes_it() {
    let (_dir, store, registry) = on_a_store();
    let mut events = registry.subscribe();
    let items: Vec<Item> = (0..3).map(|_| item(Duration::from_secs(60))).collect();
    let ids: Vec<ItemId> = items.iter().map(|i| i.id).collect();
    assert_eq!(registry.open_mirrored(items), ids);
    for id in &ids {
        assert!(store.get(*id).unwrap().expect("recorded").mirrored);
    }
    let added: Vec<ItemId> = std::iter::from_fn(|| match events.try_recv() {
        Ok(Event::Added(item)) => Some(item.id),
        _ => None,
    })
    .collect();
    assert_eq!(added, ids, "each shown, in the order filed");

    store.cap_growth(true);
    let big: Vec<Item> = (0..3).map(|_| big_item()).collect();
    let big_ids: Vec<ItemId> = big.iter().map(|i| i.id).collect();
    assert_eq!(registry.open_mirrored(big), big_ids);
    for id in &big_ids {
        assert_eq!(store.get(*id).unwrap(), None, "the store took no row");
        assert!(registry.get(*id).is_some(), "pending here all the same");
    }
    assert_eq!(registry.store_health().unwrap().unrecorded, 3);

    store.cap_growth(false);
    let health = registry.store_health().unwrap();
    assert_eq!((health.error, health.unrecorded), (None, 0));
    for id in big_ids {
        assert!(store.get(id).unwrap().expect("recorded").mirrored);
    }
}

#[test]
fn a_verdict_is_read_from_its_option_s_label_and_any_other_label_refused() {
    use crate::model::approval::{Approval, Scope, Verdict};
    for verdict in [
        Verdict::Allow(Scope::Turn),
        Verdict::Allow(Scope::Action),
        Verdict::Allow(Scope::Session),
        Verdict::Deny,
    ] {
        let label = Approval::label_of(verdict);
        assert_eq!(Reply::verdict(label), Ok(Reply::from(verdict)), "{label}");
    }
    let refused = Reply::verdict("Sure").unwrap_err();
    assert_eq!(refused, NotAVerdict("Sure".to_owned()));
    let wire = crate::bridge::wire::WireError::from(refused);
    assert_eq!(wire.code, crate::bridge::wire::ErrorCode::Invalid);
    assert_eq!(
        wire.message,
        "\"Sure\" is not one of the approval's options"
    );
}
