//! The store against a real SQLite file in a temp dir.

use super::*;
use crate::model::ids::{Clock, Ids, RunId};
use crate::model::item::ItemFilter;
use crate::model::item::{Asker, Item, Outcome};
use crate::model::resolve::Resolution;
use crate::model::run::RunStart;
use crate::model::validate::{Rules, validate};
use serde_json::json;

/// The run the test items belong to.
const RUN: RunId = RunId(uuid::Uuid::from_u128(7));

fn item(session: &str) -> Item {
    Item {
        id: Ids::random().item(),
        session_id: session.into(),
        run_id: Some(RUN),
        asker: Asker {
            pid: Some(42),
            cwd: Some("/repo".into()),
            command: Some("claude -p".into()),
            client: None,
            sub_agent: None,
            confined: false,
            host: None,
        },
        request: validate(
            &json!({"questions": [{"question": "Go?", "header": "Go", "multiSelect": false,
                "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}]}]}),
            Rules::default(),
        )
        .unwrap(),
        approval: None,
        created_at: SystemTime::now(),
        timeout: Duration::from_secs(300),
        parking: None,
        mirrored: false,
    }
}

#[test]
fn items_round_trip_and_settle_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let a = item("s1");
    store.insert(&a).unwrap();
    let pending = store.get(a.id).unwrap().unwrap();
    assert_eq!(pending.outcome, None);
    assert_eq!(pending.asker.command.as_deref(), Some("claude -p"));
    assert_eq!(pending.run_id, Some(RUN));
    assert_eq!(pending.request, a.request);

    let answered = Outcome::Answered(Resolution {
        answers: [(
            "Go?".to_owned(),
            crate::model::schema::AnswerValue::One("No".into()),
        )]
        .into(),
        defaulted: vec![],
        annotations: Default::default(),
    });
    assert!(
        store
            .settle(a.id, &answered, Some(&crate::model::item::Surface::Cli))
            .unwrap()
    );
    assert!(
        !store
            .settle(a.id, &Outcome::TimedOut { after_ms: 1 }, None)
            .unwrap()
    );
    let settled = store.get(a.id).unwrap().unwrap();
    assert_eq!(settled.outcome, Some(answered));
    assert_eq!(settled.replied_by.as_deref(), Some("cli"));
    assert!(store.dismiss(a.id).unwrap());
    assert!(store.get(a.id).unwrap().unwrap().dismissed);
}

#[test]
fn a_reopen_closes_out_what_was_left_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    let (left, done) = (item("s1"), item("s1"));
    {
        let store = Store::open(&path, Clock::system()).unwrap();
        store.insert(&left).unwrap();
        store.insert(&done).unwrap();
        store
            .settle(done.id, &Outcome::TimedOut { after_ms: 300_000 }, None)
            .unwrap();
    }
    let store = Store::open(&path, Clock::system()).unwrap();
    assert_eq!(
        store.get(left.id).unwrap().unwrap().outcome,
        Some(Outcome::Cancelled {
            reason: RESTARTED.into()
        })
    );
    assert_eq!(
        store.get(done.id).unwrap().unwrap().outcome,
        Some(Outcome::TimedOut { after_ms: 300_000 })
    );
    assert!(
        store
            .list(&ItemFilter {
                pending: Some(true),
                ..ItemFilter::default()
            })
            .unwrap()
            .is_empty()
    );
}

#[test]
fn lists_filter_and_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let items: Vec<Item> = (0..5)
        .map(|i| item(if i < 3 { "a" } else { "b" }))
        .collect();
    for it in &items {
        store.insert(it).unwrap();
    }
    store
        .settle(items[0].id, &Outcome::TimedOut { after_ms: 5 }, None)
        .unwrap();
    let by = |f: ItemFilter| store.list(&f).unwrap().len();
    assert_eq!(by(ItemFilter::default()), 5);
    assert_eq!(
        by(ItemFilter {
            pending: Some(true),
            ..ItemFilter::default()
        }),
        4
    );
    assert_eq!(
        by(ItemFilter {
            outcome: Some("timed_out".into()),
            ..ItemFilter::default()
        }),
        1
    );
    assert_eq!(
        by(ItemFilter {
            session_id: Some("b".into()),
            ..ItemFilter::default()
        }),
        2
    );
    assert_eq!(
        by(ItemFilter {
            limit: Some(2),
            offset: Some(4),
            ..ItemFilter::default()
        }),
        1
    );
    let all = store.list(&ItemFilter::default()).unwrap();
    assert!(
        all[..4].iter().all(|r| r.outcome.is_none()),
        "pending items come first"
    );
}

#[test]
fn pruning_keeps_the_newest_settled_items_and_every_pending_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let items: Vec<Item> = (0..4).map(|_| item("s")).collect();
    for it in &items {
        store.insert(it).unwrap();
    }
    for it in &items[..3] {
        store
            .settle(it.id, &Outcome::TimedOut { after_ms: 1 }, None)
            .unwrap();
    }
    assert_eq!(store.prune_settled(1).unwrap(), 2);
    assert_eq!(store.list(&ItemFilter::default()).unwrap().len(), 2);
    assert!(store.get(items[3].id).unwrap().is_some());
    assert_eq!(store.prune_settled(0).unwrap(), 1);
    assert_eq!(store.list(&ItemFilter::default()).unwrap().len(), 1);
}

#[test]
fn pruning_runs_keeps_the_newest_and_every_running_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let source = Ids::sequence();
    let ids: Vec<RunId> = (0..5).map(|_| source.run()).collect();
    for id in &ids {
        store
            .run_started(&RunStart {
                id: *id,
                session_id: "s".into(),
                command: "hark run".into(),
                cwd: None,
                pid: std::process::id(),
                confinement: None,
            })
            .unwrap();
    }
    // The oldest is still running; the others ended.
    for id in &ids[1..] {
        assert!(store.run_finished(id, 0, None, None).unwrap());
    }
    assert!(store.run_is_past(&ids[1], 3).unwrap());
    assert!(!store.run_is_past(&ids[2], 3).unwrap());
    assert!(!store.run_is_past(&ids[0], 3).unwrap(), "still running");
    assert!(
        !store.run_is_past(&source.run(), 0).unwrap(),
        "never recorded"
    );

    assert_eq!(store.prune_runs(2).unwrap(), 2);
    let left: Vec<RunId> = store.runs(10).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(left, [ids[4], ids[3], ids[0]]);
}

#[test]
fn sessions_sum_up_their_items_waiting_ones_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let (a1, a2, b) = (item("a"), item("a"), item("b"));
    for it in [&a1, &a2, &b] {
        store.insert(it).unwrap();
    }
    store
        .settle(a1.id, &Outcome::TimedOut { after_ms: 1 }, None)
        .unwrap();
    store
        .settle(
            a2.id,
            &Outcome::Skipped {
                unconfirmed_defaults: Default::default(),
            },
            Some(&crate::model::item::Surface::Cli),
        )
        .unwrap();
    let sessions = store.sessions(10).unwrap();
    let names: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(names, ["b", "a"], "the one waiting comes first");
    assert_eq!((sessions[0].items, sessions[0].pending), (1, 1));
    assert_eq!((sessions[1].items, sessions[1].pending), (2, 0));
    assert_eq!(sessions[1].last_outcome.as_deref(), Some("skipped"));
    assert_eq!(sessions[1].asker.command.as_deref(), Some("claude -p"));
    assert_eq!(sessions[1].alive, Some(Path::new("/proc/42").exists()));
    assert_eq!(store.sessions(1).unwrap().len(), 1);
}

#[test]
fn only_items_of_a_run_or_a_gated_call_are_in_those_indexes_and_lookups_still_use_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    let store = Store::open(&path, Clock::system()).unwrap();
    let in_run = item("s1");
    let outside = Item {
        run_id: None,
        ..item("s2")
    };
    store.insert(&in_run).unwrap();
    store.insert(&outside).unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    let entries = |index: &str, column: &str| -> i64 {
        conn.query_row(
            &format!("SELECT COUNT(*) FROM items INDEXED BY {index} WHERE {column} IS NOT NULL"),
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(entries("items_by_run", "run_id"), 1);
    assert_eq!(entries("items_by_tool_use", "tool_use_id"), 0);
    for (index, lookup) in [
        (
            "items_by_run",
            "SELECT COUNT(*) FROM items WHERE run_id = ?1",
        ),
        (
            "items_by_tool_use",
            "SELECT id FROM items INDEXED BY items_by_tool_use WHERE tool_use_id = ?1",
        ),
    ] {
        let plan: String = conn
            .query_row(&format!("EXPLAIN QUERY PLAN {lookup}"), ["x"], |r| r.get(3))
            .unwrap();
        assert!(plan.contains(index), "{lookup}: {plan}");
    }
    let partial: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM pragma_index_list('items') WHERE partial = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(partial, 2);
}

#[test]
fn a_store_from_a_newer_hark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    assert!(matches!(
        Store::open(&path, Clock::system()),
        Err(StoreError::TooNew { found: 99, .. })
    ));
}

#[test]
fn push_tokens_expire_but_a_parked_items_last_until_it_settles() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let a = item("s1");
    store.insert(&a).unwrap();
    let now = SystemTime::now();
    let expires_ms = |hash: &str| -> i64 {
        store
            .lock()
            .query_row(
                "SELECT expires_ms FROM push_tokens WHERE token_hash = ?1",
                [hash],
                |r| r.get(0),
            )
            .unwrap()
    };
    store
        .add_push_token(
            "past",
            a.id,
            "option:Yes",
            Some(now - Duration::from_secs(1)),
        )
        .unwrap();
    store
        .add_push_token(
            "soon",
            a.id,
            "option:No",
            Some(now + Duration::from_secs(60)),
        )
        .unwrap();
    store
        .add_push_token("held", a.id, "option:Yes", None)
        .unwrap();
    assert_eq!(expires_ms("held"), i64::MAX);

    // A is parked: what has not expired lasts until it settles; what
    // expired stays expired.
    store.hold_push_tokens(a.id).unwrap();
    assert_eq!(expires_ms("soon"), i64::MAX);
    assert_eq!(store.take_push_token("past").unwrap(), PushTaken::Expired);
    let taken = PushTaken::Taken {
        item: a.id,
        choice: "option:No".to_owned(),
    };
    assert_eq!(store.take_push_token("soon").unwrap(), taken);
    assert_eq!(store.take_push_token("soon").unwrap(), PushTaken::Used);
    assert_eq!(store.take_push_token("never").unwrap(), PushTaken::Unknown);

    // A settled two days ago: its tokens go with the next one stored,
    // another item's stay.
    let b = item("s2");
    store.insert(&b).unwrap();
    store.add_push_token("b", b.id, "option:Yes", None).unwrap();
    store
        .lock()
        .execute(
            "UPDATE items SET outcome = 'skipped', settled_ms = ?2 WHERE id = ?1",
            rusqlite::params![a.id.to_string(), unix_ms(now) as i64 - 2 * 86_400_000],
        )
        .unwrap();
    store.add_push_token("b2", b.id, "option:No", None).unwrap();
    assert_eq!(store.take_push_token("held").unwrap(), PushTaken::Unknown);
    assert!(matches!(
        store.take_push_token("b").unwrap(),
        PushTaken::Taken { item, .. } if item == b.id
    ));
}

#[test]
fn writes_made_together_are_all_recorded_or_none_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
    let (a, b) = (item("s1"), item("s1"));
    store
        .together(|w| {
            w.insert(&a)?;
            w.insert(&b)?;
            w.park(a.id, SystemTime::now())
        })
        .unwrap();
    let parked = store.parked().unwrap();
    assert_eq!(
        parked.iter().map(|r| r.id).collect::<Vec<_>>(),
        [a.id],
        "a parked in the same write"
    );
    assert!(store.get(b.id).unwrap().is_some());

    // One write the store refuses takes the others of its transaction with it.
    store.cap_growth(true);
    let small = item("s2");
    let big = Item {
        asker: Asker {
            command: Some("x".repeat(20_000)),
            ..Asker::default()
        },
        ..item("s2")
    };
    let refused = store.together(|w| {
        w.insert(&small)?;
        w.settle_at(a.id, &Outcome::Denied, None, SystemTime::now())?;
        w.insert(&big)
    });
    assert!(
        matches!(refused, Err(StoreError::Sqlite { .. })),
        "{refused:?}"
    );
    assert_eq!(store.get(small.id).unwrap(), None);
    assert_eq!(store.get(big.id).unwrap(), None);
    assert_eq!(
        store.get(a.id).unwrap().unwrap().outcome,
        None,
        "a still pending"
    );

    // And the store takes writes again afterwards.
    store.cap_growth(false);
    store.together(|w| w.insert(&big)).unwrap();
    assert!(store.get(big.id).unwrap().is_some());
}
