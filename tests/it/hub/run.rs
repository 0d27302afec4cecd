//! `hark run --hub` on a host with no daemon (a CI runner): the run's
//! agent asks the team through a daemon of the run's own, on the hub with
//! the host's agent credential.

use serde_json::Value;

use super::team::{Team, answer_on};
use crate::support::{NOT_ANSWERED, ask_line, hark_run, stdout};

/// The fake agent's question reaches an operator on another host, whose
/// answer the agent gets; the item names the host it came from, and the
/// run is confined as every run is.
#[test]
fn a_run_on_an_agent_only_host_is_answered_by_the_team() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let ci = team.agent_host("ci-runner");
    let log = ci.sandbox.path("fake.log");
    let running = std::thread::spawn(move || {
        let out = hark_run(&ci.sandbox, &log, &["--hub", "--", &ask_line()], "");
        (out, ci)
    });
    let id = alpha.asked();
    let answered = answer_on(&alpha.sandbox, &id, "SQLite");
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let (out, _ci) = running.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{}",
        stdout(&out)
    );
    assert!(stderr.contains("hark: confined by"), "{stderr}");
    let settled = alpha.settled(&id);
    assert_eq!(settled["asker"]["host"], "ci-runner");
    assert_eq!(settled["replied_by"], "cli");
}

/// Nobody answers within the run's wait: the agent is told it was not
/// answered and goes on, the run ends (nothing parks on a host no daemon
/// lives on), and the team's windows show it timed out.
#[test]
fn a_run_on_an_agent_only_host_that_nobody_answers_ends_not_answered() {
    let team = Team::start();
    let alpha = team.operator("alpha", "alice");
    let ci = team.agent_host("ci-runner");
    let log = ci.sandbox.path("fake.log");
    let prompt = format!("{}\nSAY carried on", ask_line());
    let out = hark_run(
        &ci.sandbox,
        &log,
        &["--hub", "--timeout", "1", "--", &prompt],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("! {NOT_ANSWERED} (timed out after 1 s")),
        "{stderr}"
    );
    assert!(stdout(&out).contains("carried on"), "{}", stdout(&out));
    let id = alpha.asked();
    let settled: Value = alpha.settled(&id);
    assert_eq!(settled["outcome"]["outcome"], "timed_out");
}
