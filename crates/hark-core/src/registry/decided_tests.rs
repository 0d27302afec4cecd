//! Settlements decided elsewhere, against a decider that stands in for
//! the hub: it holds the first offer per item, as the server does.

use std::collections::HashMap;
use std::sync::Mutex;

use super::tests::item;
use super::*;
use crate::model::item::Remote;
use crate::model::resolve::Pick;

/// The first offer per item wins; `down` refuses to decide.
#[derive(Debug, Default)]
struct FirstWins {
    won: Mutex<HashMap<ItemId, Offer>>,
    down: std::sync::atomic::AtomicBool,
}

impl Decider for FirstWins {
    fn decide(&self, item: Arc<Item>, offer: Offer) -> Deciding {
        let result = if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Err(Undecided("the hub is down".into()))
        } else {
            let mut won = self.won.lock().unwrap();
            let winner = won.entry(item.id).or_insert_with(|| offer.clone()).clone();
            Ok(Decision {
                ours: winner == offer,
                outcome: winner.outcome,
                replied_by: winner.replied_by,
            })
        };
        Box::pin(async move { result })
    }
}

fn alice() -> Surface {
    Surface::Hub(Remote {
        operator: "alice".into(),
        host: "devbox".into(),
        surface: Some("desktop".into()),
    })
}

fn answer(label: &str) -> Reply {
    Reply::Answer(Picks::from([("Go?".into(), Pick::Label(label.into()))]).into())
}

fn hub(registry: &Registry) -> Arc<FirstWins> {
    let decider = Arc::new(FirstWins::default());
    assert!(registry.decide_through(decider.clone()));
    decider
}

#[tokio::test]
async fn a_reply_the_hub_takes_settles_here_with_its_surface() {
    let registry = Registry::new();
    let _decider = hub(&registry);
    let mut pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    let outcome = registry
        .reply(id, answer("No"), Surface::Cli)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Answered(_)));
    assert_eq!(pending.outcome().await, outcome);
    // A second reply is refused: it is settled.
    assert_eq!(
        registry.reply(id, Reply::Skip, Surface::Cli).await,
        Err(ReplyError::NotPending(id))
    );
}

#[tokio::test]
async fn a_reply_that_loses_on_the_hub_is_refused_and_the_winner_applies() {
    let registry = Registry::new();
    let decider = hub(&registry);
    let mut pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    let mut events = registry.subscribe();
    // Another operator's skip reached the hub first.
    decider.won.lock().unwrap().insert(
        id,
        Offer {
            outcome: Outcome::Skipped {
                unconfirmed_defaults: Default::default(),
            },
            replied_by: Some(alice()),
        },
    );
    let refused = registry.reply(id, answer("No"), Surface::Desktop).await;
    assert!(
        matches!(&refused, Err(ReplyError::DecidedElsewhere { by, .. }) if by == "skipped by alice on devbox"),
        "{refused:?}"
    );
    assert!(matches!(pending.outcome().await, Outcome::Skipped { .. }));
    let settled = loop {
        if let Event::Settled { replied_by, .. } = events.recv().await.unwrap() {
            break replied_by;
        }
    };
    assert_eq!(settled, Some(alice()));
}

#[tokio::test]
async fn a_reply_the_hub_cannot_decide_leaves_the_item_pending() {
    let registry = Registry::new();
    let decider = hub(&registry);
    let pending = registry.open(item(Duration::from_secs(60)));
    let id = pending.item.id;
    decider
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let refused = registry.reply(id, answer("No"), Surface::Cli).await;
    assert!(
        matches!(refused, Err(ReplyError::Undecided(_))),
        "{refused:?}"
    );
    assert!(registry.get(id).is_some());
    decider
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(registry.reply(id, answer("No"), Surface::Cli).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_won_before_the_deadline_is_what_the_agent_gets() {
    let registry = Registry::new();
    let decider = hub(&registry);
    let mut pending = registry.open(item(Duration::from_secs(5)));
    let id = pending.item.id;
    // The answer is on the hub, its echo not here yet, when the deadline
    // passes: the timeout is offered and loses.
    let answered = outcome_of(&pending.item, answer("No")).unwrap();
    decider.won.lock().unwrap().insert(
        id,
        Offer {
            outcome: answered.clone(),
            replied_by: Some(alice()),
        },
    );
    assert_eq!(pending.outcome().await, answered);
}

#[tokio::test(start_paused = true)]
async fn with_the_hub_down_the_deadline_still_ends_the_wait_unanswered() {
    let registry = Registry::new();
    let decider = hub(&registry);
    decider
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let mut pending = registry.open(item(Duration::from_secs(5)));
    assert_eq!(
        pending.outcome().await,
        Outcome::TimedOut { after_ms: 5_000 }
    );
}

#[tokio::test(start_paused = true)]
async fn a_mirrored_item_waits_for_its_host_and_settles_by_the_hubs_word() {
    let registry = Registry::new();
    let _decider = hub(&registry);
    let mirrored = item(Duration::from_secs(5));
    let id = mirrored.id;
    assert_eq!(registry.open_mirrored(vec![mirrored.clone()]), vec![id]);
    assert!(
        registry.open_mirrored(vec![mirrored]).is_empty(),
        "filed once"
    );
    assert!(registry.get(id).unwrap().mirrored);
    // Its host's clock times it out, not this one's; nor does anything
    // here withdraw it.
    tokio::time::advance(Duration::from_secs(60)).await;
    tokio::task::yield_now().await;
    assert!(!registry.cancel(id, "the agent went away"));
    registry.shutdown("stopping");
    assert!(registry.get(id).is_some(), "a shutdown keeps it");
    let decision = Decision {
        outcome: Outcome::TimedOut { after_ms: 5_000 },
        replied_by: None,
        ours: false,
    };
    assert!(registry.apply(id, &decision));
    assert!(registry.get(id).is_none());
    assert!(!registry.apply(id, &decision), "applied once");
}
