//! The hub failing under the team: the server restarting mid-wait, an
//! operator's daemon away while its team works.

use serde_json::Value;

use super::team::{Operator, Team, answer_on};
use crate::support::{Sandbox, ask, db, questions, text};

/// Answers `id` with `pick` on `operator` until a try is taken (it
/// succeeds, or says the item is already settled: an earlier try whose
/// outcome was unknown was committed after all), for as long as a test
/// waits for an event: once the client is back, the hub's stream may still
/// be electing its leader, and each try is a real request bounded by the
/// hub's own timeout. `after` says what the tries followed, for the panic.
fn taken_after(operator: &Operator, id: &str, pick: &str, after: &str) {
    let deadline = std::time::Instant::now() + hark_harness::PATIENCE;
    let mut said = Vec::new();
    while std::time::Instant::now() < deadline {
        let out = answer_on(&operator.sandbox, id, pick);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() || stderr.contains("already settled") {
            return;
        }
        said.push(stderr);
    }
    panic!(
        "no reply was taken after {after}; the tries said:\n{}\nthe operator's log:\n{}",
        said.join(""),
        operator.daemon.log.tail(40)
    );
}

/// The server is killed and restarted while an agent waits: the item and
/// the wait survive, and the answer given after the restart arrives.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_restart_mid_wait_still_delivers_the_answer() {
    let mut team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "120")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = alpha.asked();
    team.server().kill();
    // While the hub is down nothing can win: the reply is refused and the
    // item stays pending.
    let refused = answer_on(&alpha.sandbox, &id, "SQLite");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("still pending"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    team.server()
        .restart()
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    alpha.reconnected();
    // A reply whose acknowledgement the reconnecting client never got has
    // an unknown outcome: it is reported as still pending, and may have
    // been committed all the same (the refused one above, sent when the
    // client reconnected) — then the next try says the item is settled,
    // and the agent's answer below says by which reply.
    taken_after(&alpha, &id, "SQLite", "the restart");
    let result = asking.await.unwrap();
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(got["answers"]["Which database?"], "SQLite");
}

/// An operator's daemon is down while a question is asked and answered
/// elsewhere; back up, it shows what happened meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_back_from_offline_shows_what_was_asked_and_answered() {
    let team = Team::start();
    let (_alpha, away, id) = answered_while_beta_is_away(&team).await;

    let back = Operator::start(away);
    let settled = back.settled(&id);
    assert_eq!(settled["outcome"]["answers"]["Which database?"], "SQLite");
    assert_eq!(settled["replied_by"], "hub");
    assert_eq!(settled["replied_remote"]["operator"], "alice");
    assert_eq!(settled["asker"]["host"], "ci-runner");
}

/// A three-node cluster loses two nodes while both operators answer: no
/// reply can be confirmed then, none is reported as won unless it was;
/// once the nodes are back, the one committed (or, if none was, the next)
/// is what the agent gets and what both daemons record. Never two.
#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_losing_its_quorum_mid_answer_never_answers_twice() {
    let mut team = Team::start_cluster(3);
    let alpha = team.operator("alpha", "alice");
    let beta = team.operator("beta", "bob");
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "300")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = alpha.asked();
    assert_eq!(beta.asked(), id);

    for node in [1, 2] {
        team.cluster().kill(node).unwrap();
    }
    let (on_alpha, on_beta) = std::thread::scope(|s| {
        let a = s.spawn(|| answer_on(&alpha.sandbox, &id, "SQLite"));
        let b = s.spawn(|| answer_on(&beta.sandbox, &id, "Postgres (Recommended)"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let confirmed: Vec<&str> = [(&on_alpha, "SQLite"), (&on_beta, "Postgres (Recommended)")]
        .into_iter()
        .filter(|(out, _)| out.status.success())
        .map(|(_, pick)| pick)
        .collect();
    assert!(confirmed.len() <= 1, "two replies were confirmed");
    for node in [1, 2] {
        team.cluster()
            .restart(node)
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    }
    team.decisions_settled().await;
    // Neither committed: the next reply decides.
    taken_after(&alpha, &id, "SQLite", "the quorum came back");

    let got: Value = serde_json::from_str(&text(&asking.await.unwrap())).unwrap();
    let winner = got["answers"]["Which database?"]
        .as_str()
        .unwrap()
        .to_owned();
    for pick in confirmed {
        assert_eq!(pick, winner, "a reply reported won is the one delivered");
    }
    for daemon in [&alpha, &beta] {
        assert_eq!(
            daemon.settled(&id)["outcome"]["answers"]["Which database?"],
            winner.as_str()
        );
    }
}

/// A write a leader change let in after the item was decided (a second
/// value on its operator key, as the cluster test can leave) changes
/// nothing: the agent got the first, the deciding daemon keeps it, and a
/// daemon catching up afterwards, whose watch shows only a key's last
/// value, records the first too.
#[tokio::test(flavor = "multi_thread")]
async fn a_later_write_over_a_decision_does_not_change_who_won() {
    let team = Team::start();
    let (alpha, away, id) = answered_while_beta_is_away(&team).await;

    team.late_write("beta", "ci-runner", &id, "Postgres (Recommended)")
        .await;
    let back = Operator::start(away);
    let settled = back.settled(&id);
    assert_eq!(settled["outcome"]["answers"]["Which database?"], "SQLite");
    assert_eq!(settled["replied_remote"]["operator"], "alice");
    let again = answer_on(&back.sandbox, &id, "Postgres (Recommended)");
    assert!(!again.status.success(), "a settled item answered again");
    assert_eq!(
        alpha.settled(&id)["outcome"]["answers"]["Which database?"],
        "SQLite"
    );
}

/// Alice on alpha answers "SQLite" to the CI runner's question while bob's
/// daemon on beta is down, and the agent gets it: alpha, beta's sandbox
/// (to start it again) and the item.
async fn answered_while_beta_is_away(team: &Team) -> (Operator, Sandbox, String) {
    let alpha = team.operator("alpha", "alice");
    let beta = team.operator("beta", "bob");
    let away = beta.daemon.kill9();
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "120")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = alpha.asked();
    let out = answer_on(&alpha.sandbox, &id, "SQLite");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(&text(&asking.await.unwrap())).unwrap();
    assert_eq!(got["answers"]["Which database?"], "SQLite");
    (alpha, away, id)
}
