//! Who may do what, enforced by the server: an agent's nkey user asks
//! (puts items), reads and watches decisions and may give up on its own
//! item (`.asker`), but its publish of an operator's decision is refused
//! by the server; the operator's user decides.

use std::time::Duration;

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, kv::Config, kv::Store};
use async_nats::{Event, ServerError};
use futures::StreamExt;
use hark_harness::{NatsOptions, NatsServer, NatsUser, Permissions, Rule};
use nkeys::KeyPair;

use super::{
    DECISIONS, Events, ITEMS, WAIT, connect, decide, decisions_of, kind, ok, stored, within,
};

/// What an agent's user may publish to, found by taking each subject away
/// in turn: its items (`put`), its own side of a decision, and the
/// JetStream API requests async-nats makes to bind the two buckets
/// (`get_key_value`: stream info), read a key (`entry`/`get`: a direct get
/// of the last message on the key's subject), read the earliest decision
/// on an item from the stream's leader (a message get by subject), and
/// watch decisions
/// (`watch`/`watch_with_history`: an ordered push consumer, created
/// without a name; after a missed heartbeat, as across a server restart,
/// async-nats deletes it and creates it again by name, filter in the
/// subject; and the flow control replies it owes once a catch-up passes
/// about 2 MB: without them the watch stalls). No `$JS.API.INFO`, no
/// consumer on the items (the agent does not watch them).
pub const AGENT_PUBLISH: &[&str] = &[
    "$KV.hark_items.>",
    "$KV.hark_decisions.*.asker",
    "$JS.API.STREAM.INFO.KV_hark_items",
    "$JS.API.STREAM.INFO.KV_hark_decisions",
    "$JS.API.CONSUMER.CREATE.KV_hark_decisions",
    "$JS.API.CONSUMER.CREATE.KV_hark_decisions.>",
    "$JS.API.CONSUMER.DELETE.KV_hark_decisions.>",
    "$JS.API.DIRECT.GET.KV_hark_items.>",
    "$JS.API.DIRECT.GET.KV_hark_decisions.>",
    "$JS.API.STREAM.MSG.GET.KV_hark_decisions",
    "$JS.FC.KV_hark_decisions.>",
];

/// What an operator's user may publish to: the whole JetStream API (it
/// creates the buckets), both buckets' keys, and flow control for its
/// watches of either bucket.
pub const OPERATOR_PUBLISH: &[&str] = &[
    "$JS.API.>",
    "$JS.FC.>",
    "$KV.hark_items.>",
    "$KV.hark_decisions.>",
];

/// What both may subscribe to: their own inboxes (replies, acks, a watch's
/// deliveries).
pub const SUBSCRIBE: &[&str] = &["_INBOX.>"];

/// An agent's and an operator's keys, and the server's users for them.
pub fn users() -> (KeyPair, KeyPair, NatsOptions) {
    let (agent, operator) = (KeyPair::new_user(), KeyPair::new_user());
    let options = NatsOptions {
        users: vec![
            user(&agent, AGENT_PUBLISH),
            user(&operator, OPERATOR_PUBLISH),
        ],
    };
    (agent, operator, options)
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

fn user(key: &KeyPair, publish: &[&str]) -> NatsUser {
    NatsUser {
        nkey: key.public_key(),
        permissions: Permissions {
            publish: Rule::allow(publish),
            subscribe: Rule::allow(SUBSCRIBE),
        },
    }
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

/// The agent asks, watches its decision and reads it, and may give up on
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

    let agent_seed = agent_key.seed().unwrap();
    let (_agent, js, mut events) = connect(&urls, Some(&agent_seed), timeout).await;
    let items = within("binding the items", js.get_key_value(ITEMS))
        .await
        .expect("the agent binds the items bucket");
    let decisions = within("binding the decisions", js.get_key_value(DECISIONS))
        .await
        .expect("the agent binds the decisions bucket");
    within("asking", items.put("q1", "may I?".into()))
        .await
        .expect("the agent puts its item");
    let item = within("reading the item", items.get("q1")).await;
    assert_eq!(
        item.expect("the agent reads its item").as_deref(),
        Some(&b"may I?"[..])
    );
    let mut watch = within("watching", decisions.watch("q2.*"))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "the agent watches decisions: {e}\n{}",
                server.log().tail(30)
            )
        });

    // Its own side: it gives up on q1.
    decide(&js, "q1", "asker", "timed out")
        .await
        .expect("the agent decides its own side");
    assert_eq!(
        decisions_of(&decisions, "q1").await,
        [("q1.asker".to_owned(), "timed out".to_owned())]
    );

    // An operator's decision from the agent: refused by the server.
    let forged = decide(&js, "q3", "operator", "allow").await;
    let refused = refusal(&mut events, "$KV.hark_decisions.q3.operator", WAIT).await;
    assert!(
        refused.is_some(),
        "the server's permissions violation for the forged decision"
    );
    // The ack never comes: async-nats reports its timeout, not a refusal.
    assert_eq!(kind(&forged), PublishErrorKind::TimedOut);
    let forged_delete = within("deleting", decisions.delete("q2.operator")).await;
    assert!(forged_delete.is_err(), "{forged_delete:?}");
    assert!(
        refusal(&mut events, "$KV.hark_decisions.q2.operator", WAIT)
            .await
            .is_some(),
        "the server's permissions violation for the forged delete"
    );
    assert_eq!(decisions_of(&op_decisions, "q3").await, []);

    // The operator's decision is taken, and the agent's watch and read see it.
    decide(&op_js, "q2", "operator", "allow")
        .await
        .expect("the operator decides");
    let seen = within("the agent's watch", watch.next())
        .await
        .expect("an entry")
        .expect("a good entry");
    assert_eq!(
        (seen.key.as_str(), &*seen.value),
        ("q2.operator", &b"allow"[..])
    );
    assert_eq!(
        decisions_of(&decisions, "q2").await,
        [("q2.operator".to_owned(), "allow".to_owned())]
    );
    // The earliest decision on the item, read from the leader as hark's
    // winner is.
    let first = within(
        "the earliest decision",
        decisions
            .stream
            .get_first_raw_message_by_subject("$KV.hark_decisions.q2.*", 1),
    )
    .await
    .expect("the agent reads the earliest decision from the leader");
    assert_eq!(
        (first.subject.as_str(), &*first.payload),
        ("$KV.hark_decisions.q2.operator", &b"allow"[..])
    );
    assert_eq!(
        stored(&op_js).await,
        2,
        "q1's asker and q2's operator, nothing else"
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
        decide(&op_js, &format!("q{n}"), "operator", &value)
            .await
            .expect("a decision");
    }
    let agent_seed = agent_key.seed().unwrap();
    let (_agent, js, _) = connect(&urls, Some(&agent_seed), WAIT).await;
    let decisions = within("binding", js.get_key_value(DECISIONS))
        .await
        .unwrap();
    for (who, kv) in [("the agent", decisions), ("the operator", op_decisions)] {
        let mut watch = within("watching", kv.watch_with_history("*.*"))
            .await
            .expect("a watch");
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
