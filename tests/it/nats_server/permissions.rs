//! Who may do what, enforced by the server with the permissions hark's
//! credential gives (`hark_hub::credential::permissions`): an agent host's
//! key puts its own host's items, follows and reads its own items'
//! decisions through hark's reader (`hark_hub::read`: consumers whose
//! filter is in the request's subject) and may give up on its own item
//! (`.asker`); its publish of an operator's decision is refused by the
//! server, and so is every read of another host's items or decisions,
//! tried as an attacker holding the key would. The operator's key decides.
//!
//! Each subject of the agent's list was found needed by taking it away:
//! its items and its own side of a decision; binding the buckets
//! (`get_key_value`: stream info); the consumer of its decisions, made by
//! name with the filter in the subject (again `{name}_{n}` after a missed
//! heartbeat, the old one deleted: the restart test); and the flow control
//! replies a catch-up past about 2 MB owes. Replies come to its own
//! inboxes (`_INBOX.<host>.>`).

use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, kv::Config, kv::Store};
use async_nats::{ConnectOptions, Event, ServerError};
use futures::StreamExt;
use hark_harness::{NatsOptions, NatsServer, NatsUser, Permissions};
use hark_hub::Role;
use hark_hub::credential::{inbox_prefix, permissions};
use hark_hub::read;
use nkeys::KeyPair;

use super::{
    DECISIONS, Events, ITEMS, WAIT, connect, connect_with, decide, decisions_of, kind, ok, stored,
    within,
};

/// The agent host the tests' agent key is for (its keys start `ci.`).
pub const HOST: &str = "ci";

/// An agent's and an operator's keys, and the server's users for them,
/// with the permissions `hark hub credential` prints.
pub fn users() -> (KeyPair, KeyPair, NatsOptions) {
    let (agent, operator) = (KeyPair::new_user(), KeyPair::new_user());
    let user = |key: &KeyPair, role| NatsUser {
        nkey: key.public_key(),
        permissions: Permissions::from_terms(&permissions(role, HOST)),
    };
    let options = NatsOptions {
        users: vec![user(&agent, Role::Agent), user(&operator, Role::Operator)],
    };
    (agent, operator, options)
}

/// Connects as the agent host, as hark's hub client does (its inboxes).
pub async fn connect_agent(
    urls: &[String],
    key: &KeyPair,
    timeout: Duration,
) -> (async_nats::Client, jetstream::Context, Events) {
    let options = ConnectOptions::with_nkey(key.seed().unwrap())
        .custom_inbox_prefix(inbox_prefix(Role::Agent, HOST));
    connect_with(urls, options, timeout).await
}

/// Creates both buckets (history 1) as the operator; the decisions'.
pub async fn buckets(operator: &jetstream::Context) -> Store {
    for bucket in [ITEMS, DECISIONS] {
        let config = Config {
            bucket: bucket.to_owned(),
            history: 1,
            ..Default::default()
        };
        within("creating a bucket", operator.create_key_value(config))
            .await
            .expect("the operator creates the buckets");
    }
    within("binding", operator.get_key_value(DECISIONS))
        .await
        .expect("the operator binds the decisions")
}

/// The server's `-ERR` for a refused publish to `subject`, if one comes
/// within `patience`; other events are passed over.
async fn refusal(events: &mut Events, subject: &str, patience: Duration) -> Option<String> {
    // The server says `Permissions Violation for Publish to "SUBJECT"`;
    // async-nats passes it on as it is.
    let wanted = format!("permissions violation for publish to \"{subject}\"").to_lowercase();
    tokio::time::timeout(patience, async {
        loop {
            match events.recv().await? {
                Event::ServerError(ServerError::Other(e)) if e.to_lowercase() == wanted => {
                    return Some(e);
                }
                _ => {}
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// The agent asks, follows its decision and reads it, and may give up on
/// its own item; its operator's decision is refused by the server (the
/// connection gets the server's permissions violation for that subject,
/// the ack never comes) and nothing is stored; the operator's decision on
/// another item is taken, and the agent sees it.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_cannot_write_an_operators_decision() {
    let (agent_key, operator_key, options) = users();
    let server = ok(NatsServer::start(&options));
    let urls = [server.url()];
    let timeout = Duration::from_secs(2);
    let operator_seed = operator_key.seed().unwrap();
    let (_op, op_js, _op_events) = connect(&urls, Some(&operator_seed), timeout).await;
    let op_decisions = buckets(&op_js).await;
    let op_items = within("binding", op_js.get_key_value(ITEMS)).await.unwrap();

    let (_agent, js, mut events) = connect_agent(&urls, &agent_key, timeout).await;
    let items = within("binding the items", js.get_key_value(ITEMS))
        .await
        .expect("the agent binds the items bucket");
    let decisions = within("binding the decisions", js.get_key_value(DECISIONS))
        .await
        .expect("the agent binds the decisions bucket");
    within("asking", items.put("ci.q1", "may I?".into()))
        .await
        .expect("the agent puts its item");
    let item = within("reading the item", op_items.get("ci.q1")).await;
    assert_eq!(
        item.expect("the operator reads the item").as_deref(),
        Some(&b"may I?"[..])
    );
    let (_, watch) = within(
        "following",
        read::watch(&js, &decisions, "ci.q2.*", DeliverPolicy::LastPerSubject),
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the agent follows its decisions: {e}\n{}",
            server.log().tail(30)
        )
    });
    let mut watch = std::pin::pin!(watch);

    // Its own side: it gives up on q1.
    decide(&js, "ci.q1", "asker", "timed out")
        .await
        .expect("the agent decides its own side");
    assert_eq!(
        decisions_of(&op_decisions, "ci.q1").await,
        [("ci.q1.asker".to_owned(), "timed out".to_owned())]
    );

    // An operator's decision from the agent: refused by the server.
    let forged = decide(&js, "ci.q3", "operator", "allow").await;
    let refused = refusal(&mut events, "$KV.hark_decisions.ci.q3.operator", WAIT).await;
    assert!(
        refused.is_some(),
        "the server's permissions violation for the forged decision"
    );
    // The ack never comes: async-nats reports its timeout, not a refusal.
    assert_eq!(kind(&forged), PublishErrorKind::TimedOut);
    let forged_delete = within("deleting", decisions.delete("ci.q2.operator")).await;
    assert!(forged_delete.is_err(), "{forged_delete:?}");
    assert!(
        refusal(&mut events, "$KV.hark_decisions.ci.q2.operator", WAIT)
            .await
            .is_some(),
        "the server's permissions violation for the forged delete"
    );
    assert_eq!(decisions_of(&op_decisions, "ci.q3").await, []);

    // The operator's decision is taken, and the agent's watch sees it.
    decide(&op_js, "ci.q2", "operator", "allow")
        .await
        .expect("the operator decides");
    let seen = within("the agent's watch", watch.next())
        .await
        .expect("an entry")
        .expect("a good entry");
    assert_eq!(
        (seen.key.as_str(), &*seen.value),
        ("ci.q2.operator", &b"allow"[..])
    );
    // The earliest decision on the item, as hark's winner reads it on an
    // agent host: a consumer of the item's decisions from the first.
    let (kept, first) = within(
        "the earliest decision",
        read::watch(&js, &decisions, "ci.q2.*", DeliverPolicy::All),
    )
    .await
    .expect("the agent reads its item's decisions from the first");
    assert_eq!(kept, 1);
    let first = within("the first", std::pin::pin!(first).next())
        .await
        .expect("an entry")
        .expect("a good entry");
    assert_eq!(
        (first.key.as_str(), &*first.value),
        ("ci.q2.operator", &b"allow"[..])
    );
    assert_eq!(
        stored(&op_js).await,
        2,
        "q1's asker and q2's operator, nothing else"
    );
}

/// An attacker holding an agent host's key (read off a CI runner) tries
/// every read the JetStream API offers for another host's item and its
/// answer: a consumer filtered on that host, on everything, or on its own
/// host in the subject with another filter in the body; a direct get, a
/// message get; listening on every inbox while the operator reads. The
/// server refuses each: nothing of the other host's reaches it.
#[tokio::test(flavor = "multi_thread")]
async fn an_agents_key_reads_nothing_of_another_hosts() {
    let (agent_key, operator_key, options) = users();
    let server = ok(NatsServer::start(&options));
    let urls = [server.url()];
    let timeout = Duration::from_secs(2);
    let operator_seed = operator_key.seed().unwrap();
    let (_op, op_js, _) = connect(&urls, Some(&operator_seed), timeout).await;
    let op_decisions = buckets(&op_js).await;
    let op_items = within("binding", op_js.get_key_value(ITEMS)).await.unwrap();
    within(
        "posting",
        op_items.put("build.q1", "secret question".into()),
    )
    .await
    .unwrap();
    decide(&op_js, "build.q1", "operator", "secret answer")
        .await
        .expect("the operator decides the other host's item");

    let (agent, js, mut events) = connect_agent(&urls, &agent_key, timeout).await;
    let items = within("binding", js.get_key_value(ITEMS)).await.unwrap();
    let decisions = within("binding", js.get_key_value(DECISIONS))
        .await
        .unwrap();
    let secret = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains("secret");

    for (bucket, keys) in [
        (&decisions, "build.q1.*"),
        (&decisions, ">"),
        (&decisions, "*.*.*"),
        (&items, "build.*"),
        (&items, ">"),
    ] {
        for from in [DeliverPolicy::All, DeliverPolicy::LastPerSubject] {
            let read = within("a consumer", read::watch(&js, bucket, keys, from)).await;
            assert!(
                read.is_err(),
                "a consumer of {keys} in {} was made",
                bucket.name
            );
        }
    }
    // async-nats's own watch: no name, the filter in the body only.
    let unnamed = within("a watch", decisions.watch_with_history(">")).await;
    assert!(unnamed.is_err(), "an unnamed consumer was made");
    // Its own host in the subject, everything in the body.
    let reply: Result<serde_json::Value, _> = within(
        "a mismatched consumer",
        js.request(
            "CONSUMER.CREATE.KV_hark_decisions.x.$KV.hark_decisions.ci.>".to_owned(),
            &serde_json::json!({
                "stream_name": "KV_hark_decisions",
                "config": {"name": "x", "filter_subjects": ["$KV.hark_decisions.>"],
                           "deliver_subject": "_INBOX.ci.x", "ack_policy": "none"},
                "action": "create",
            }),
        ),
    )
    .await;
    let made = reply
        .as_ref()
        .is_ok_and(|r| r.get("error").is_none() && r.get("config").is_some());
    assert!(!made, "a consumer of everything was made: {reply:?}");
    for (bucket, key) in [(&decisions, "build.q1.operator"), (&items, "build.q1")] {
        let got = within("a direct get", bucket.entry(key)).await;
        assert!(
            !matches!(&got, Ok(Some(e)) if secret(&e.value)),
            "a direct get read {key}"
        );
    }
    let got = within(
        "a message get",
        decisions
            .stream
            .get_first_raw_message_by_subject("$KV.hark_decisions.build.q1.*", 1),
    )
    .await;
    assert!(
        !matches!(&got, Ok(m) if secret(&m.payload)),
        "a message get read the other host's answer"
    );
    // Every inbox, while the operator reads the other host's item.
    let mut everything = agent.subscribe("_INBOX.>").await.unwrap();
    let violation = tokio::time::timeout(WAIT, async {
        loop {
            match events.recv().await {
                Some(Event::ServerError(ServerError::Other(e)))
                    if e.to_lowercase().contains("subscription to \"_inbox.>\"") =>
                {
                    return e;
                }
                Some(_) => {}
                None => std::future::pending().await,
            }
        }
    })
    .await;
    assert!(
        violation.is_ok(),
        "no refusal of the subscription to _INBOX.>"
    );
    let read = within("the operator's read", op_items.get("build.q1")).await;
    assert!(read.unwrap().is_some_and(|v| secret(&v)));
    let overheard = tokio::time::timeout(Duration::from_millis(500), everything.next()).await;
    assert!(
        !matches!(&overheard, Ok(Some(m)) if secret(&m.payload)),
        "the agent overheard the operator's read"
    );
    // Nothing of it was written either.
    assert_eq!(
        decisions_of(&op_decisions, "build.q1").await,
        [("build.q1.operator".to_owned(), "secret answer".to_owned())]
    );
}

/// Catching up on many decisions (an operator's daemon back after an
/// hour, an agent host's watch from the start): both users' watches get
/// every one, which needs the flow control replies their lists allow.
#[tokio::test(flavor = "multi_thread")]
async fn agents_and_operators_catch_up_on_many_decisions() {
    let (agent_key, operator_key, options) = users();
    let server = ok(NatsServer::start(&options));
    let urls = [server.url()];
    let operator_seed = operator_key.seed().unwrap();
    let (_op, op_js, _) = connect(&urls, Some(&operator_seed), WAIT).await;
    let op_decisions = buckets(&op_js).await;
    const MANY: usize = 600;
    let value = "x".repeat(8 << 10);
    for n in 0..MANY {
        decide(&op_js, &format!("ci.q{n}"), "operator", &value)
            .await
            .expect("a decision");
    }
    let (_agent, js, _) = connect_agent(&urls, &agent_key, WAIT).await;
    let decisions = within("binding", js.get_key_value(DECISIONS))
        .await
        .unwrap();
    for (who, js, kv) in [
        ("the agent", &js, decisions),
        ("the operator", &op_js, op_decisions),
    ] {
        let (_, watch) = within(
            "watching",
            read::watch(js, &kv, "ci.*.*", DeliverPolicy::LastPerSubject),
        )
        .await
        .expect("a watch");
        let mut watch = std::pin::pin!(watch);
        let mut seen = 0;
        let caught_up = tokio::time::timeout(WAIT, async {
            while seen < MANY {
                watch
                    .next()
                    .await
                    .expect("the watch goes on")
                    .expect("an entry");
                seen += 1;
            }
        })
        .await;
        assert!(
            caught_up.is_ok(),
            "{who}'s watch stalled after {seen} of {MANY}"
        );
    }
}
