//! The hub failing under the team: the server restarting mid-wait, an
//! operator's daemon away while its team works.

use serde_json::Value;

use super::team::{Operator, Team, answer_on};
use crate::support::{ask, db, questions, text};

/// How many times an answer is tried while the hub comes back: each try is
/// a real request, bounded by the hub's own timeout.
const TRIES: usize = 20;

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
    team.nats.kill();
    // While the hub is down nothing can win: the reply is refused and the
    // item stays pending.
    let refused = answer_on(&alpha.sandbox, &id, "SQLite");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("still pending"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    team.nats
        .restart()
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    // A reply whose acknowledgement the reconnecting client never got has
    // an unknown outcome: it is reported as still pending, and may have
    // been committed all the same — then the next try says so.
    let mut tries = (0..TRIES).map(|_| answer_on(&alpha.sandbox, &id, "SQLite"));
    let taken = tries.find(|out| {
        out.status.success()
            || String::from_utf8_lossy(&out.stderr).contains("(answered by alice on alpha)")
    });
    assert!(
        taken.is_some(),
        "the answer was never taken after the restart"
    );
    let result = asking.await.unwrap();
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(got["answers"]["Which database?"], "SQLite");
}

/// An operator's daemon is down while a question is asked and answered
/// elsewhere; back up, it shows what happened meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_back_from_offline_shows_what_was_asked_and_answered() {
    let team = Team::start();
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

    let back = Operator::start(away);
    let settled = back.settled(&id);
    assert_eq!(settled["outcome"]["answers"]["Which database?"], "SQLite");
    assert_eq!(settled["replied_by"], "hub");
    assert_eq!(settled["replied_remote"]["operator"], "alice");
    assert_eq!(settled["asker"]["host"], "ci-runner");
}
