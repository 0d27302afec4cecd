//! A partition during a decision: a 3-node cluster, the decisions bucket
//! on all three, two nodes killed while an operator decides. The client's
//! timeout is an unknown outcome, not a refusal: once a node is back, what
//! the cluster committed is read, and a second decision on the same item
//! agrees with it (no double answer).

use std::time::{Duration, Instant};

use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::stream::Stream;
use async_nats::jetstream::{self, publish::PublishAck};
use hark_harness::{NatsCluster, NatsOptions};

use super::{
    WAIT, connect, decide, decisions_bucket, in_flight, last_on_leader, ok, race_for_one_decision,
    within,
};

/// The decisions stream once it has a leader with every replica current:
/// the leader's node index.
pub(crate) async fn settled_leader(js: &jetstream::Context) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        // While the cluster elects its leaders a request may go unanswered
        // (it times out after the client's own timeout): asked again.
        let stream: Result<Stream, _> =
            within("the stream", js.get_stream("KV_hark_decisions")).await;
        let info = match stream {
            Ok(mut stream) => within("the stream's info", stream.info())
                .await
                .map(|i| i.cluster.clone())
                .ok(),
            Err(_) => None,
        };
        if let Some(Some(cluster)) = info
            && let Some(leader) = &cluster.leader
            && cluster.replicas.len() == 2
            && cluster.replicas.iter().all(|r| r.current)
        {
            return leader.trim_start_matches('n').parse::<usize>().unwrap() - 1;
        }
        assert!(Instant::now() < deadline, "no settled stream leader");
        // A real request again (each one waits on the server's answer).
        tokio::task::yield_now().await;
    }
}

/// Decides again until the cluster's answer is final: taken, or refused
/// as 10071 because a decision was committed. A timeout, "no responders"
/// and 10164 (another decision on the item is still in flight) are asked
/// again. The answer, and the refusals on the way.
async fn decide_until_settled(
    js: &jetstream::Context,
    id: &str,
    role: &str,
) -> (Result<PublishAck, PublishError>, Vec<String>) {
    let deadline = Instant::now() + WAIT;
    let mut on_the_way = Vec::new();
    loop {
        let result = decide(js, id, role, "retried").await;
        match &result {
            Err(e) if e.kind() == PublishErrorKind::TimedOut => on_the_way.push("timed out".into()),
            Err(e) if e.kind() == PublishErrorKind::StreamNotFound => {
                on_the_way.push("no responders".into())
            }
            Err(e) if in_flight(e) => on_the_way.push("10164 in flight".into()),
            _ => return (result, on_the_way),
        }
        assert!(
            Instant::now() < deadline,
            "no final answer to the decision: {on_the_way:?}"
        );
    }
}

/// The race of `super`, its racers spread over three nodes and the bucket
/// on all three: one winner still; a replicated stream may refuse a loser
/// with 10164 (in flight) rather than 10071.
#[tokio::test(flavor = "multi_thread")]
async fn one_decision_wins_a_race_across_a_cluster() {
    let started = Instant::now();
    let cluster = ok(NatsCluster::start(3, &NatsOptions::default()));
    eprintln!(
        "cluster: 3 nodes with a metadata leader in {:?}",
        started.elapsed()
    );
    let in_flight = race_for_one_decision(&cluster.urls(), 3).await;
    eprintln!("race, 3 nodes: {in_flight} of 15 refusals were 10164, the rest 10071");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_during_a_lost_quorum_is_an_unknown_outcome() {
    let mut cluster = ok(NatsCluster::start(3, &NatsOptions::default()));
    let timeout = Duration::from_secs(2);
    let (_setup, setup_js, _) = connect(&cluster.urls(), None, WAIT).await;
    decisions_bucket(&setup_js, 3).await;
    let leader = settled_leader(&setup_js).await;
    // The deciding client is on the stream leader's node, which stays up.
    let (_client, js, _events) = connect(&[ok(cluster.url(leader))], None, timeout).await;
    decide(&js, "before", "operator", "allow")
        .await
        .expect("a decision with the whole cluster up");

    let others: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    for &i in &others {
        ok(cluster.kill(i));
    }
    let sent = Instant::now();
    let cut = decide(&js, "cut", "operator", "allow").await;
    let failed_after = sent.elapsed();
    let cut_kind = cut.as_ref().map(|_| ()).map_err(|e| e.kind());
    assert!(cut.is_err(), "acked with 2 of 3 nodes down: {cut:?}");

    ok(cluster.restart(others[0]));
    ok(cluster.wait_meta_leader(others[0]));
    let back = Instant::now();
    let first_read = last_on_leader(&js, "$KV.hark_decisions.cut.operator").await;
    let first_read_after = back.elapsed();
    let (retried, on_the_way) = decide_until_settled(&js, "cut", "asker").await;
    let settled_after = back.elapsed();
    let operator = last_on_leader(&js, "$KV.hark_decisions.cut.operator").await;
    let asker = last_on_leader(&js, "$KV.hark_decisions.cut.asker").await;
    // No double answer: one decision on the item, and the retry's answer
    // agrees with it (refused exactly when the cut decision was committed).
    match &retried {
        Ok(_) => assert_eq!((&operator, asker.as_deref()), (&None, Some("retried"))),
        Err(e) => {
            assert_eq!(e.kind(), PublishErrorKind::WrongLastSequence, "{e:?}");
            assert_eq!((operator.as_deref(), &asker), (Some("allow"), &None));
        }
    }
    assert_eq!(
        last_on_leader(&js, "$KV.hark_decisions.before.operator").await,
        Some("allow".to_owned())
    );
    eprintln!(
        "cluster: the decision with 2 of 3 down failed with {cut_kind:?} after \
         {failed_after:?}; one node back, the first read ({first_read_after:?}) found \
         {first_read:?}; the retry settled after {settled_after:?} as {:?} (on the way: \
         {on_the_way:?}); committed: operator {operator:?}, asker {asker:?}",
        retried.map(|_| ()).map_err(|e| e.kind())
    );
}
