//! Parking end to end: a `hark run` whose agent (the fake, which runs
//! Claude Code's `PreToolUse` hooks, `defer` and `--resume` as measured)
//! asks a question nobody answers within the bounded wait. The agent is
//! paused (it exits, saved), the item waits with no timeout, and the late
//! answer resumes the agent with exactly that answer.

use std::process::{Child, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A `hark run` in `session` with a 1 s wait, whose agent asks and ends
/// with what the question returned (its result: stdout's last line).
pub(crate) fn parking_run(daemon: &Daemon, session: &str, extra: &[&str]) -> Child {
    let prompt = ask_line();
    let mut run = daemon
        .sandbox
        .hark(["run", "--session", session, "--timeout", "1"]);
    run.args(extra)
        .arg("--agent")
        .arg(fake_claude())
        .args(["--", &prompt]);
    spawn_logged(daemon, session, run)
}

/// Starts `run`, its output piped, the fake's starts logged for `session`
/// (see [`starts`]).
fn spawn_logged(daemon: &Daemon, session: &str, mut run: std::process::Command) -> Child {
    run.env(
        "FAKE_CLAUDE_LOG",
        daemon.sandbox.path(format!("{session}.log")),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// The agent's starts, as the fake logged them.
fn starts(daemon: &Daemon, session: &str) -> Vec<Value> {
    invocations(&daemon.sandbox.path(format!("{session}.log")))
        .into_iter()
        .filter(|line| line.get("argv").is_some())
        .collect()
}

/// Waits until the item of `session` parks and its agent has exited; the
/// item's id.
pub(crate) fn parked(daemon: &Daemon, session: &str) -> String {
    let event = daemon
        .log
        .wait_event("operator.question.parked", &[("session_id", session)]);
    let agent = starts(daemon, session).remove(0);
    assert!(
        hark_harness::process::wait_identity_gone(&agent["process"], Duration::from_secs(10)),
        "the paused agent's process is gone"
    );
    let id = event["question_id"].as_str().unwrap().to_owned();
    let item = inbox(&daemon.sandbox)
        .into_iter()
        .find(|i| i["id"] == id.as_str())
        .expect("the parked item is listed");
    assert_eq!(item["state"], "parked", "{item}");
    assert!(item["outcome"].is_null());
    let runs = hark(&daemon.sandbox, &["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == session)
        .expect("the run is recorded");
    assert_eq!(run["status"], "parked", "{run}");
    id
}

/// Waits for the run to end well, its agent having received the answer
/// SQLite; its stderr.
pub(crate) fn resumed_with_sqlite(run: Child) -> String {
    let (out, stdout, stderr) = finished(run);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "the resumed agent received exactly the answer: {stdout}"
    );
    stderr
}

fn finished(run: Child) -> (Output, String, String) {
    let out = run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// The second start resumed the first's session, with no prompt.
fn assert_resumed(daemon: &Daemon, session: &str) {
    let starts = starts(daemon, session);
    assert_eq!(starts.len(), 2, "started, then resumed once: {starts:?}");
    let first_session = flag(&starts[1], "--resume").expect("resumed with --resume");
    assert!(!first_session.is_empty());
    let argv: Vec<&str> = starts[1]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        !argv.iter().any(|a| a.starts_with("ASK ")),
        "the resumed agent gets no prompt: {argv:?}"
    );
}

#[test]
fn an_unanswered_question_parks_the_agent_and_a_late_answer_resumes_it() {
    let daemon = serve(json!({}));
    let run = parking_run(&daemon, "parked", &[]);
    let id = parked(&daemon, "parked");

    answer(&daemon.sandbox, &id, "SQLite");
    let stderr = resumed_with_sqlite(run);
    assert!(stderr.contains("parked"), "{stderr}");
    assert_resumed(&daemon, "parked");
    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1, "one item, not one per start: {items:?}");
    assert_eq!(items[0]["outcome"]["outcome"], "answered");

    // Answered twice: the second is refused, and nothing resumes again.
    let again = hark(&daemon.sandbox, &["answer", &id, "--pick", "SQLite"]);
    assert!(!again.status.success());
    assert_eq!(starts(&daemon, "parked").len(), 2);
}

#[test]
fn a_parked_question_survives_a_daemon_killed_and_restarted() {
    let daemon = serve(json!({}));
    let run = parking_run(&daemon, "restarted", &[]);
    let id = parked(&daemon, "restarted");
    let sandbox = daemon.kill9();
    let daemon = serve_in(&sandbox, json!({}), &[]);
    answer(&daemon.sandbox, &id, "SQLite");
    resumed_with_sqlite(run);
    assert_resumed(&daemon, "restarted");
}

#[test]
fn a_skipped_parked_question_resumes_the_agent_with_the_skip() {
    let daemon = serve(json!({}));
    let run = parking_run(&daemon, "skipped", &[]);
    let id = parked(&daemon, "skipped");
    assert!(hark(&daemon.sandbox, &["skip", &id]).status.success());
    let (out, stdout, stderr) = finished(run);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the operator skipped this question"),
        "the agent got the skip's error: {stderr}"
    );
    assert!(!stdout.contains("answers"), "{stdout}");
    assert_resumed(&daemon, "skipped");
}

#[test]
fn with_on_timeout_proceed_the_agent_gets_the_timeout_and_goes_on() {
    let daemon = serve(json!({}));
    let run = parking_run(&daemon, "proceeds", &["--on-timeout", "proceed"]);
    let (out, stdout, stderr) = finished(run);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("timed out after 1 s"), "{stderr}");
    assert!(!stdout.contains("answers"), "{stdout}");
    assert_eq!(starts(&daemon, "proceeds").len(), 1, "never paused");
    let start = &starts(&daemon, "proceeds")[0];
    assert!(flag(start, "--settings").is_none(), "no park hook: {start}");
}

#[test]
fn an_agent_started_by_hand_with_the_park_hook_parks_and_resumes_with_the_answer() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let stdout_of = |out: &Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let config = stdout_of(&hark(sandbox, &["mcp-config"]));
    let settings = stdout_of(&hark(sandbox, &["mcp-config", "--park-hook"]));
    let claude = |prompt: Option<&str>, resume: Option<&str>| {
        let mut agent = sandbox.command(fake_claude());
        agent.arg("-p");
        agent.args(prompt);
        agent.args(["--output-format", "stream-json", "--verbose"]);
        agent.args(["--mcp-config", config.trim(), "--settings", settings.trim()]);
        agent.args(["--allowedTools", "mcp__operator__ask"]);
        if let Some(session) = resume {
            agent.args(["--resume", session]);
        }
        agent
            .env("HARK_SESSION_ID", "by-hand")
            .env("HARK_ASK_TIMEOUT", "1")
            .output()
            .unwrap()
    };
    let first = claude(Some(&ask_line()), None);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let result: Value = stdout_of(&first)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "result")
        .expect("a result event");
    assert_eq!(result["stop_reason"], "tool_deferred", "{result}");
    let id = daemon
        .log
        .wait_event("operator.question.parked", &[("session_id", "by-hand")])["question_id"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(sandbox, &id, "SQLite");
    let session = result["session_id"].as_str().unwrap();
    let resumed = claude(None, Some(session));
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        stdout_of(&resumed).contains(r#"{\"answers\":{\"Which database?\":\"SQLite\"}}"#),
        "{}",
        stdout_of(&resumed)
    );
}

/// A read-only `hark run` in `session` with a 1 s wait, whose agent writes
/// `file`.
fn read_only_writer(daemon: &Daemon, session: &str, file: &std::path::Path) -> Child {
    let write = format!(
        "TOOL Write {}",
        json!({"file_path": file, "content": "written"})
    );
    let mut run =
        daemon
            .sandbox
            .hark(["run", "--read-only", "--session", session, "--timeout", "1"]);
    run.arg("--agent").arg(fake_claude()).args(["--", &write]);
    spawn_logged(daemon, session, run)
}

#[test]
fn a_parked_approval_once_allowed_lets_the_write_happen_and_once_denied_does_not() {
    for (verdict, writes) in [("approve", true), ("deny", false)] {
        let daemon = serve(json!({}));
        let session = format!("gated-{verdict}");
        let file = daemon.sandbox.path(format!("{verdict}.txt"));
        let run = read_only_writer(&daemon, &session, &file);
        let id = parked(&daemon, &session);
        assert!(!file.exists(), "nothing is written while it is parked");
        let item = inbox(&daemon.sandbox)
            .into_iter()
            .find(|i| i["id"] == id.as_str())
            .unwrap();
        assert_eq!(item["kind"], "approval");
        succeed(&daemon.sandbox, &[verdict, &id]);
        let (out, _, stderr) = finished(run);
        assert!(out.status.success(), "{verdict}: {stderr}");
        assert_resumed(&daemon, &session);
        assert_eq!(file.exists(), writes, "{verdict}: {stderr}");
        if writes {
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "written");
        } else {
            assert!(stderr.contains("denied"), "{stderr}");
        }
    }
}

#[test]
fn a_parked_run_the_operator_cancels_ends_without_resuming_its_agent() {
    let daemon = serve(json!({}));
    let run = parking_run(&daemon, "cancelled", &[]);
    let id = parked(&daemon, "cancelled");
    succeed(&daemon.sandbox, &["cancel", &id]);
    let (out, _, stderr) = finished(run);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the operator cancelled the run"),
        "{stderr}"
    );
    assert_eq!(starts(&daemon, "cancelled").len(), 1, "never resumed");
    let items = inbox(&daemon.sandbox);
    assert_eq!(items[0]["outcome"]["outcome"], "cancelled");
    assert_eq!(
        items[0]["outcome"]["reason"],
        "the operator cancelled the run"
    );
}

/// A parking run, parked, whose `hark run` then dies by SIGKILL with the
/// daemon (a reboot, as near as a test gets), after it kept its paused-run
/// file; the daemon restarted. The parked item's id and the run's id.
fn rebooted_while_parked(session: &str) -> (Daemon, String, String) {
    let daemon = serve(json!({}));
    let mut run = parking_run(&daemon, session, &[]);
    let stderr = Lines::follow("hark run", run.stderr.take().unwrap());
    let id = parked(&daemon, session);
    stderr.wait_for("the run waits parked", |l| l.contains("hark: parked"));
    run.kill().unwrap();
    run.wait().unwrap();
    let sandbox = daemon.kill9();
    let paused: Vec<_> = std::fs::read_dir(sandbox.data_dir().join("paused"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(paused.len(), 1, "the paused run was kept: {paused:?}");
    let run_id = paused[0]
        .file_name()
        .to_string_lossy()
        .trim_end_matches(".json")
        .to_owned();
    (serve_in(&sandbox, json!({}), &[]), id, run_id)
}

/// The run's record, as `hark runs --json` lists it.
fn run_record(daemon: &Daemon, run_id: &str) -> Value {
    let runs = hark(&daemon.sandbox, &["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    runs.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == run_id)
        .cloned()
        .unwrap_or_else(|| panic!("run {run_id} is recorded: {runs}"))
}

#[test]
fn a_parked_run_whose_hark_run_is_gone_is_resumed_by_the_daemon_once_answered() {
    let (daemon, id, run_id) = rebooted_while_parked("rebooted");
    let record = run_record(&daemon, &run_id);
    assert_eq!(record["status"], "parked", "{record}");
    answer(&daemon.sandbox, &id, "SQLite");
    let ended = daemon
        .log
        .wait_event("resumed run ended", &[("run_id", &run_id)]);
    assert_eq!(ended["exit_code"], 0, "{ended}");
    assert_resumed(&daemon, "rebooted");
    let record = run_record(&daemon, &run_id);
    assert_eq!(record["status"], "finished", "{record}");
    assert!(
        record["result"]
            .as_str()
            .unwrap_or_default()
            .contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "the resumed agent received exactly the answer: {record}"
    );
    let log = std::fs::read_to_string(
        daemon
            .sandbox
            .data_dir()
            .join("runs")
            .join(format!("{run_id}.log")),
    )
    .unwrap();
    assert!(log.contains("resuming the agent"), "{log}");
    assert!(
        !daemon
            .sandbox
            .data_dir()
            .join("paused")
            .join(format!("{run_id}.json"))
            .exists(),
        "a resumed run is no longer paused"
    );
}

#[test]
fn a_parked_run_whose_agent_session_is_gone_is_reported_not_left_waiting() {
    let (daemon, id, run_id) = {
        // The agent's saved sessions go while nothing runs.
        let (daemon, id, run_id) = rebooted_while_parked("forgotten");
        let sandbox = daemon.kill9();
        std::fs::remove_dir_all(sandbox.path("home/.claude/projects/fake")).unwrap();
        (serve_in(&sandbox, json!({}), &[]), id, run_id)
    };
    let event = daemon.log.wait_event(
        "a parked run cannot be resumed: its agent's session is gone",
        &[("run_id", &run_id)],
    );
    assert!(event["transcript"].as_str().unwrap().ends_with(".json"));
    let item = inbox(&daemon.sandbox)
        .into_iter()
        .find(|i| i["id"] == id.as_str())
        .unwrap();
    assert_eq!(item["outcome"]["outcome"], "cancelled", "{item}");
    assert!(
        item["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("the agent cannot be resumed: its saved session"),
        "{item}"
    );
    let record = run_record(&daemon, &run_id);
    assert_eq!(record["status"], "failed", "{record}");
    assert!(
        record["result"].as_str().unwrap().contains("is gone"),
        "{record}"
    );
}

#[test]
fn a_parked_run_stopped_by_a_signal_stays_parked_and_its_answer_resumes_it() {
    let daemon = serve(json!({}));
    let mut run = parking_run(&daemon, "signalled", &[]);
    let stderr = Lines::follow("hark run", run.stderr.take().unwrap());
    let id = parked(&daemon, "signalled");
    stderr.wait_for("the run waits parked", |l| l.contains("hark: parked"));
    hark_harness::process::terminate(run.id()).unwrap();
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15));
    stderr.wait_for("it says the question stays", |l| {
        l.contains("while parked; the question stays with the operator")
    });
    let record = hark(&daemon.sandbox, &["runs", "--json"]);
    let record: Value = serde_json::from_slice(&record.stdout).unwrap();
    assert_eq!(record[0]["status"], "parked", "not ended: {record}");
    answer(&daemon.sandbox, &id, "SQLite");
    let ended = daemon.log.wait_event("resumed run ended", &[]);
    assert_eq!(ended["exit_code"], 0, "{ended}");
    assert_resumed(&daemon, "signalled");
}

#[test]
fn hark_resume_takes_over_a_parked_run_here_and_only_once() {
    let (daemon, id, run_id) = rebooted_while_parked("taken-over");
    let mut resumed = daemon
        .sandbox
        .hark(["resume", &run_id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Lines::follow("hark resume", resumed.stderr.take().unwrap());
    stderr.wait_for("it waits parked", |l| l.contains("hark: parked"));
    let again = hark(&daemon.sandbox, &["resume", &run_id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("held by a hark process"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    answer(&daemon.sandbox, &id, "SQLite");
    let status = resumed.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut resumed.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(status.success(), "{}", stderr.tail(20));
    assert!(
        stdout.contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{stdout}"
    );
    assert_resumed(&daemon, "taken-over");
    // The daemon left it to `hark resume`: it resumed nothing itself.
    assert!(
        daemon
            .log
            .find_event(0, "paused run resumed by the daemon", |_| true)
            .is_none()
    );
    let gone = hark(&daemon.sandbox, &["resume", &run_id]);
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("is paused"),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
}

/// A `hark run --wrap` of the fake's own command line (`claude -p PROMPT
/// FLAGS…`), with a 1 s wait.
fn wrapped_run(daemon: &Daemon, session: &str, flags: &[&str]) -> Child {
    let mut run = daemon.sandbox.hark(["run", "--wrap", "--session", session]);
    run.args(["--timeout", "1", "--"])
        .arg(fake_claude())
        .args(["-p", &ask_line(), "--model", "fake-model"])
        .args(flags);
    spawn_logged(daemon, session, run)
}

#[test]
fn a_wrapped_command_line_parks_and_resumes_with_its_own_flags() {
    let daemon = serve(json!({}));
    let run = wrapped_run(
        &daemon,
        "wrapped",
        &["--output-format", "stream-json", "--verbose"],
    );
    let id = parked(&daemon, "wrapped");
    answer(&daemon.sandbox, &id, "SQLite");
    resumed_with_sqlite(run);
    assert_resumed(&daemon, "wrapped");
    let resumed = &starts(&daemon, "wrapped")[1];
    assert_eq!(
        flag(resumed, "--model").as_deref(),
        Some("fake-model"),
        "{resumed}"
    );
}

#[test]
fn a_wrapped_command_line_hark_cannot_resume_keeps_the_bounded_wait_and_says_why() {
    let daemon = serve(json!({}));
    let run = wrapped_run(&daemon, "unwrappable", &["--output-format", "json"]);
    let (out, _, stderr) = finished(run);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot be paused and resumed") && stderr.contains("stream-json"),
        "{stderr}"
    );
    let start = &starts(&daemon, "unwrappable")[0];
    assert!(flag(start, "--settings").is_none(), "no park hook: {start}");
    let items = inbox(&daemon.sandbox);
    assert_eq!(items[0]["outcome"]["outcome"], "timed_out", "{}", items[0]);
}
