//! The facts the team hub's design rests on, checked against a real
//! nats-server (`hark_harness::nats`) with the client the hub uses
//! (async-nats): one decision wins per item whoever races for it, the
//! server refuses an agent's answer, a restart keeps the data and the
//! watches, and a cluster that lost its quorum reports an unknown outcome.
//!
//! - here: the helpers, the race for a decision, the restart.
//! - `permissions`: agent and operator nkey users, and what the server
//!   lets each do.
//! - `cluster`: three nodes, two killed during a decision.

pub(crate) mod cluster;
mod permissions;

use std::time::{Duration, Instant};

use async_nats::header::HeaderMap;
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::kv::{Config, Store};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use async_nats::jetstream::{self, publish::PublishAck};
use async_nats::{Client, ConnectOptions, Event, ServerAddr};
use futures::StreamExt;
use hark_harness::{NatsError, NatsOptions, NatsServer, Report};
use tokio::sync::mpsc;

/// How long any one wait on the server or the client may take.
pub const WAIT: Duration = Duration::from_secs(30);

/// The bucket of decisions: one key per role under each item's id, and
/// history 1 (a decision is never rewritten).
pub const DECISIONS: &str = "hark_decisions";
/// The bucket of items the agents ask.
pub const ITEMS: &str = "hark_items";

/// `result`, or the test fails with the error and its causes.
pub fn ok<T>(result: Result<T, NatsError>) -> T {
    result.unwrap_or_else(|e| panic!("{}", Report(&e)))
}

/// `what`, given [`WAIT`]; the test fails when it takes longer.
pub async fn within<F: std::future::IntoFuture>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future.into_future())
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
}

/// A connection's events (disconnects, the server's `-ERR`s), as they come.
pub type Events = mpsc::UnboundedReceiver<Event>;

/// Connects to `urls` (the first that answers), as the nkey `seed` when
/// given; the JetStream context's requests time out after `timeout`.
pub async fn connect(
    urls: &[String],
    seed: Option<&str>,
    timeout: Duration,
) -> (Client, jetstream::Context, Events) {
    let options = match seed {
        Some(seed) => ConnectOptions::with_nkey(seed.to_owned()),
        None => ConnectOptions::new(),
    };
    connect_with(urls, options, timeout).await
}

/// Connects to `urls` with `options`, its events passed on.
pub async fn connect_with(
    urls: &[String],
    options: ConnectOptions,
    timeout: Duration,
) -> (Client, jetstream::Context, Events) {
    let (tx, events) = mpsc::unbounded_channel();
    let options = options.event_callback(move |event| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(event);
        }
    });
    let addrs: Vec<ServerAddr> = urls.iter().map(|u| u.parse().expect("a URL")).collect();
    let client = within("connecting", options.connect(addrs))
        .await
        .expect("connected");
    let js = jetstream::ContextBuilder::new()
        .timeout(timeout)
        .build(client.clone());
    (client, js, events)
}

/// Creates the decisions bucket (history 1) with `replicas`. A cluster
/// that has just elected its metadata leader may not know its peers yet
/// ("no suitable peers for placement", 10005): asked again until it does.
pub async fn decisions_bucket(js: &jetstream::Context, replicas: usize) -> Store {
    let deadline = Instant::now() + WAIT;
    loop {
        let config = Config {
            bucket: DECISIONS.to_owned(),
            history: 1,
            num_replicas: replicas,
            ..Default::default()
        };
        match within("creating the decisions bucket", js.create_key_value(config)).await {
            Ok(store) => return store,
            Err(e) if Instant::now() < deadline && e.to_string().contains("no suitable peers") => {}
            Err(e) => panic!("the decisions bucket: {e:?}"),
        }
    }
}

/// Publishes `role`'s decision on item `id`, taken only if no decision of
/// either role exists yet: the server compares the last sequence of any
/// subject under the item (`<id>.*`) with 0. The ack is awaited.
pub async fn decide(
    js: &jetstream::Context,
    id: &str,
    role: &str,
    value: &str,
) -> Result<PublishAck, PublishError> {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", "0");
    headers.insert(
        "Nats-Expected-Last-Subject-Sequence-Subject",
        format!("$KV.{DECISIONS}.{id}.*").as_str(),
    );
    let subject = format!("$KV.{DECISIONS}.{id}.{role}");
    let ack = js
        .publish_with_headers(subject, headers, value.to_owned().into())
        .await?;
    ack.await
}

/// Whether the server refused the decision because one was taken: 10071
/// ("wrong last sequence: N", which async-nats 0.51 gives as
/// `PublishErrorKind::WrongLastSequence`), or 10164 ("wrong last
/// sequence", no N: another decision on the item is in flight, which a
/// replicated stream answers and async-nats gives as
/// `PublishErrorKind::Other`, the code in its source).
pub fn lost_race(error: &PublishError) -> bool {
    error.kind() == PublishErrorKind::WrongLastSequence || in_flight(error)
}

/// The refusal 10164: another decision on the item is in flight.
pub fn in_flight(error: &PublishError) -> bool {
    use std::error::Error as _;
    error.kind() == PublishErrorKind::Other
        && error
            .source()
            .and_then(|s| s.downcast_ref::<async_nats::jetstream::Error>())
            .is_some_and(|e| e.error_code() == ErrorCode::STREAM_WRONG_LAST_SEQUENCE_CONSTANT)
}

/// How many messages the decisions stream holds (asked of the server;
/// `Store::status` only repeats what it learnt when bound).
pub async fn stored(js: &jetstream::Context) -> u64 {
    let mut stream = within("the stream", js.get_stream(format!("KV_{DECISIONS}")))
        .await
        .expect("the decisions stream");
    within("the stream's info", stream.info())
        .await
        .expect("its info")
        .state
        .messages
}

/// The error's kind, or a failure naming what succeeded instead.
pub fn kind(result: &Result<PublishAck, PublishError>) -> PublishErrorKind {
    match result {
        Ok(ack) => panic!("the publish was acked: {ack:?}"),
        Err(e) => e.kind(),
    }
}

/// The decision values stored under item `id`: (key, value), of both roles.
pub async fn decisions_of(kv: &Store, id: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for role in ["operator", "asker"] {
        let key = format!("{id}.{role}");
        let entry = within("reading a decision", kv.entry(key.as_str()))
            .await
            .expect("an entry read");
        if let Some(entry) = entry {
            found.push((key, String::from_utf8_lossy(&entry.value).into_owned()));
        }
    }
    found
}

/// Many operators and askers, each on its own connection (as on its own
/// host; racer n on `urls[n % len]`), race to decide one item: exactly one
/// ack succeeds, every other publish is refused by the server as a lost
/// race, and the stream, a watcher and the leader's reads hold only the
/// winner. How many refusals were 10164 (in flight) rather than 10071.
pub async fn race_for_one_decision(urls: &[String], replicas: usize) -> usize {
    let (_client, js, _events) = connect(urls, None, WAIT).await;
    let kv = decisions_bucket(&js, replicas).await;
    let mut watch = within("watching", kv.watch("item-1.*"))
        .await
        .expect("a watch");
    const RACERS: usize = 16;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(RACERS));
    let mut racers = Vec::new();
    for n in 0..RACERS {
        let role = if n % 2 == 0 { "operator" } else { "asker" };
        let (barrier, url) = (barrier.clone(), urls[n % urls.len()].clone());
        racers.push(tokio::spawn(async move {
            let (_client, js, _events) = connect(&[url], None, WAIT).await;
            barrier.wait().await;
            let value = format!("{role}-{n}");
            (value.clone(), decide(&js, "item-1", role, &value).await)
        }));
    }
    let (mut winners, mut in_flights) = (Vec::new(), 0);
    for racer in racers {
        let (value, result) = within("a racer", racer).await.expect("a racer ran");
        match result {
            Ok(_) => winners.push(value),
            Err(e) => {
                assert!(lost_race(&e), "refused for another reason: {e:?}");
                in_flights += usize::from(in_flight(&e));
            }
        }
    }
    assert_eq!(winners.len(), 1, "exactly one ack succeeds: {winners:?}");
    let winner = &winners[0];
    let role = winner.split('-').next().unwrap();
    let seen = within("the watcher's first entry", watch.next())
        .await
        .expect("an entry")
        .expect("a good entry");
    assert_eq!(
        (seen.key.as_str(), &*seen.value),
        (format!("item-1.{role}").as_str(), winner.as_bytes())
    );
    for other in ["operator", "asker"] {
        let stored = last_on_leader(&js, &format!("$KV.{DECISIONS}.item-1.{other}")).await;
        assert_eq!(stored.as_ref(), (other == role).then_some(winner));
    }
    assert_eq!(stored(&js).await, 1, "nothing but the winner was stored");
    // A late decision, after all the racers were answered, is refused too.
    let late = decide(&js, "item-1", "asker", "late").await;
    assert!(lost_race(late.as_ref().unwrap_err()), "{late:?}");
    in_flights
}

/// What the decisions stream's leader has last on `subject` (`None`:
/// nothing), asked again while the stream has no leader to answer (a
/// cluster electing one). Not a direct get, which any replica may answer
/// from behind.
pub async fn last_on_leader(js: &jetstream::Context, subject: &str) -> Option<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(stream) = js.get_stream(format!("KV_{DECISIONS}")).await {
            match stream.get_last_raw_message_by_subject(subject).await {
                Ok(message) => return Some(String::from_utf8_lossy(&message.payload).into()),
                Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return None,
                Err(_) => {}
            }
        }
        assert!(Instant::now() < deadline, "no answer for {subject}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_decision_wins_a_race_of_both_roles() {
    let server = ok(NatsServer::start(&NatsOptions::default()));
    let in_flight = race_for_one_decision(&[server.url()], 1).await;
    eprintln!("race, one server: {in_flight} of 15 refusals were 10164, the rest 10071");
}

/// The server killed (SIGKILL) and restarted on its port with its store:
/// a decision written before is still there, and an agent's watch opened
/// before the kill gets a decision written after the restart, once the
/// client has reconnected and the watch's consumer has been made again
/// (with the agent's permissions: the server refuses it nothing).
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_keeps_the_data_and_the_watch() {
    let (agent_key, operator_key, options) = permissions::users();
    let mut server = ok(NatsServer::start(&options));
    let urls = [server.url()];
    let timeout = Duration::from_secs(2);
    let operator_seed = operator_key.seed().unwrap();
    let (_op, op_js, _) = connect(&urls, Some(&operator_seed), timeout).await;
    permissions::buckets(&op_js).await;
    let op_kv = within("binding", op_js.get_key_value(DECISIONS))
        .await
        .unwrap();
    decide(&op_js, "ci.before", "operator", "yes")
        .await
        .expect("decided before the kill");
    let (_agent, js, mut events) = permissions::connect_agent(&urls, &agent_key, timeout).await;
    let kv = within("binding", js.get_key_value(DECISIONS))
        .await
        .expect("the agent binds the decisions");
    let (_, watch) = within(
        "watching",
        hark_hub::read::watch(&js, &kv, "ci.after.*", DeliverPolicy::LastPerSubject),
    )
    .await
    .expect("a watch");
    let mut watch = std::pin::pin!(watch);

    server.kill();
    within("the client's disconnect", async {
        while !matches!(events.recv().await, Some(Event::Disconnected)) {}
    })
    .await;
    ok(server.restart());
    let restarted = Instant::now();
    within("the client's reconnect", async {
        while !matches!(events.recv().await, Some(Event::Connected)) {}
    })
    .await;
    let reconnected = restarted.elapsed();

    assert_eq!(
        decisions_of(&op_kv, "ci.before").await,
        [("ci.before.operator".to_owned(), "yes".to_owned())],
        "the decision written before the kill survived it"
    );
    decide(&op_js, "ci.after", "operator", "no")
        .await
        .expect("decided after the restart");
    let written = restarted.elapsed();
    // The watch reports the heartbeats it missed while the server was
    // down as errors (Consumer, MissingHeartbeat), and goes on: its
    // consumer is made again.
    let mut errors = Vec::new();
    let seen = tokio::time::timeout(WAIT, async {
        loop {
            match watch.next().await.expect("the watch goes on") {
                Ok(entry) => return entry,
                Err(e) => errors.push(e.to_string()),
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the watcher's entry after the restart: not within {WAIT:?}; its errors: \
             {errors:?}; the server's log:\n{}",
            server.log().tail(15)
        )
    });
    let delivered = restarted.elapsed();
    assert_eq!(
        (seen.key.as_str(), &*seen.value),
        ("ci.after.operator", &b"no"[..])
    );
    let refused: Vec<String> = server
        .log()
        .all()
        .into_iter()
        .filter(|l| l.contains("Violation"))
        .collect();
    assert_eq!(
        refused,
        Vec::<String>::new(),
        "the agent's watch was made again within its permissions"
    );
    eprintln!(
        "restart: client reconnected {reconnected:?} after the server was ready, the value \
         was written at {written:?}, the watcher got it at {delivered:?}, after errors {errors:?}"
    );
}
