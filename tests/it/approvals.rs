//! The write-mode gate end to end: `hark run --read-only` dispatches the fake
//! `claude -p`, which calls `mcp__operator__approve` as Claude Code calls its
//! `--permission-prompt-tool`, against a real `hark serve` whose scripted
//! operator gives verdicts (`approval:<tool>`). The fake really writes the
//! files it is allowed to, so each test checks the disk, the stored items
//! and the audit events.

use std::path::Path;

use crate::support::*;
use serde_json::{Value, json};

/// A `TOOL Write` line writing `content` to `path`.
fn write(path: &Path, content: &str) -> String {
    format!(
        "TOOL Write {}",
        json!({"file_path": path, "content": content})
    )
}

/// `hark run --read-only` in `session` with the script `lines`.
fn read_only_run(daemon: &Daemon, session: &str, lines: &[String]) -> std::process::Output {
    let log = daemon.sandbox.path("fake.log");
    let prompt = lines.join("\n");
    hark_run(
        &daemon.sandbox,
        &log,
        &["--read-only", "--session", session, "--", &prompt],
        "",
    )
}

/// The approval items, oldest first.
fn approvals(daemon: &Daemon) -> Vec<Value> {
    let mut items: Vec<Value> = inbox(&daemon.sandbox)
        .into_iter()
        .filter(|i| i["kind"] == "approval")
        .collect();
    items.sort_by_key(|i| i["created_ms"].as_u64());
    items
}

/// The audit events the daemon logged so far, once `n` are there.
fn audit(daemon: &Daemon, n: usize) -> Vec<Value> {
    daemon
        .log
        .wait_until(&format!("{n} write-mode audit events"), |lines| {
            let events: Vec<Value> = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(&l.text).ok())
                .filter(|e| e["message"] == "machine.write_mode_granted")
                .collect();
            (events.len() >= n).then_some(events)
        })
}

fn outcome(item: &Value) -> (&str, &str) {
    let outcome = &item["outcome"];
    (
        outcome["outcome"].as_str().unwrap_or_default(),
        outcome["scope"].as_str().unwrap_or_default(),
    )
}

#[test]
fn a_read_passes_unasked_and_an_action_grant_covers_one_write_only() {
    let daemon = serve(json!({"approval:Write": "action"}));
    let dir = hark_harness::scratch();
    let (one, two) = (dir.path().join("one.txt"), dir.path().join("two.txt"));
    let read = format!("TOOL Read {}", json!({"file_path": one}));
    let out = read_only_run(
        &daemon,
        "s-action",
        &[read, write(&one, "1"), write(&two, "2")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&one).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(&two).unwrap(), "2");

    let items = approvals(&daemon);
    assert_eq!(
        items.len(),
        2,
        "each write asked, the read did not: {items:?}"
    );
    for item in &items {
        assert_eq!(outcome(item), ("approved", "action"));
        assert_eq!(item["approval"]["tool"], "Write");
        assert_eq!(item["replied_by"], "script");
    }
    assert_eq!(items[0]["approval"]["target"], json!(one));
    assert!(
        items[0]["approval"]["preview"]
            .as_str()
            .unwrap()
            .contains("+ 1"),
        "{:?}",
        items[0]["approval"]
    );
    let question = items[0]["request"]["questions"][0]["question"]
        .as_str()
        .unwrap();
    assert!(
        question.starts_with("The agent wants to edit")
            && question.ends_with("Allow this write action?"),
        "{question}"
    );
    let events = audit(&daemon, 2);
    for event in &events {
        assert_eq!(event["verdict"], "allow");
        assert_eq!(event["scope"], "action");
        assert_eq!(event["by"], "operator");
        assert_eq!(event["session_id"], "s-action");
        assert_eq!(event["tool"], "Write");
    }
}

#[test]
fn a_turn_grant_covers_the_rest_of_the_run_and_not_the_next() {
    let daemon = serve(json!({"approval:Write": "turn"}));
    let dir = hark_harness::scratch();
    let file = |n: &str| dir.path().join(n);
    let out = read_only_run(
        &daemon,
        "s-turn",
        &[write(&file("a"), "a"), write(&file("b"), "b")],
    );
    assert!(out.status.success());
    assert_eq!(approvals(&daemon).len(), 1, "the second write was covered");
    let events = audit(&daemon, 2);
    assert_eq!(
        (events[0]["by"].as_str(), events[0]["scope"].as_str()),
        (Some("operator"), Some("turn"))
    );
    assert_eq!(
        (events[1]["by"].as_str(), events[1]["scope"].as_str()),
        (Some("grant"), Some("turn"))
    );

    let out = read_only_run(&daemon, "s-turn", &[write(&file("c"), "c")]);
    assert!(out.status.success());
    assert_eq!(
        approvals(&daemon).len(),
        2,
        "a new run of the session asks again"
    );
    for name in ["a", "b", "c"] {
        assert_eq!(std::fs::read_to_string(file(name)).unwrap(), name);
    }
}

#[test]
fn a_session_grant_covers_later_runs_of_that_session_only() {
    let daemon = serve(json!({"approval:Write": "session"}));
    let dir = hark_harness::scratch();
    let file = |n: &str| dir.path().join(n);
    assert!(
        read_only_run(&daemon, "s-long", &[write(&file("a"), "a")])
            .status
            .success()
    );
    assert!(
        read_only_run(&daemon, "s-long", &[write(&file("b"), "b")])
            .status
            .success()
    );
    assert_eq!(approvals(&daemon).len(), 1, "the second run was covered");
    assert!(
        read_only_run(&daemon, "s-other", &[write(&file("c"), "c")])
            .status
            .success()
    );
    let items = approvals(&daemon);
    assert_eq!(items.len(), 2, "another session asks");
    assert_eq!(outcome(&items[1]), ("approved", "session"));
    assert_eq!(std::fs::read_to_string(file("b")).unwrap(), "b");
}

#[test]
fn deny_keeps_the_agent_read_only_and_it_is_told_why() {
    let daemon = serve(json!({"approval:Write": "deny"}));
    let dir = hark_harness::scratch();
    let target = dir.path().join("nope.txt");
    let out = read_only_run(
        &daemon,
        "s-deny",
        &[write(&target, "x"), write(&target, "y")],
    );
    assert!(out.status.success());
    assert!(!target.exists(), "a denied write never happens");
    assert!(
        stdout(&out).contains("The operator denied this write"),
        "{}",
        stdout(&out)
    );
    let items = approvals(&daemon);
    assert_eq!(items.len(), 2, "a denial grants nothing: asked again");
    assert!(items.iter().all(|i| outcome(i) == ("denied", "")));
    let events = audit(&daemon, 2);
    assert!(
        events
            .iter()
            .all(|e| e["verdict"] == "deny" && e["scope"] == "")
    );
}

#[test]
fn an_external_effect_asks_every_time_and_never_offers_a_grant() {
    let daemon = serve(json!({"approval:Write": "turn", "approval:Bash": "action"}));
    let dir = hark_harness::scratch();
    let push = format!("TOOL Bash {}", json!({"command": "git push origin main"}));
    let lines = [write(&dir.path().join("a"), "a"), push.clone(), push];
    let out = read_only_run(&daemon, "s-push", &lines);
    assert!(out.status.success());
    let items = approvals(&daemon);
    assert_eq!(
        items.len(),
        3,
        "the turn grant does not cover a push; each push asks"
    );
    for push in &items[1..] {
        assert_eq!(push["approval"]["external"], true);
        let labels: Vec<&str> = push["request"]["questions"][0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["Allow this action only", "Deny"]);
        assert_eq!(outcome(push), ("approved", "action"));
    }
}

#[test]
fn headless_a_write_is_denied_with_the_reason() {
    let nobody = sandbox();
    let log = nobody.path("fake.log");
    let target = nobody.path("nope.txt");
    let prompt = write(&target, "x");
    let out = hark_run(&nobody, &log, &["--read-only", "--", &prompt], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!target.exists());
    let shown = stdout(&out);
    assert!(
        shown.contains("no operator is attached to approve writes"),
        "{shown}"
    );
    let run = &invocations(&log)[0];
    assert_eq!(
        flag(run, "--permission-prompt-tool").as_deref(),
        Some("mcp__operator__approve")
    );
    assert!(
        flag(run, "--disallowedTools")
            .unwrap()
            .contains("mcp__operator__ask")
    );
    assert!(run["env"].get("HARK_ASK_SOCK").is_none());
}

#[test]
fn an_approval_takes_a_verdict_never_answers_and_one_from_the_cli_lets_the_write_through() {
    // The script has no verdict for Edit: the item waits for the CLI.
    let daemon = serve(json!({}));
    let dir = hark_harness::scratch();
    let target = dir.path().join("main.rs");
    std::fs::write(&target, "fn main() {}\n").unwrap();
    let edit = format!(
        "TOOL Edit {}",
        json!({"file_path": target, "old_string": "fn main() {}", "new_string": "fn main() { run() }"})
    );
    let run = spawn_run(
        &daemon.sandbox,
        &["--read-only", "--session", "s-cli"],
        &edit,
    );
    let id = daemon.log.question_id("s-cli");

    let answered = hark(&daemon.sandbox, &["answer", &id, "--pick", "Deny"]);
    assert!(!answered.status.success());
    assert!(
        String::from_utf8_lossy(&answered.stderr).contains("approval and takes approve or deny"),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    assert!(!hark(&daemon.sandbox, &["skip", &id]).status.success());
    let pending = approvals(&daemon);
    assert!(
        pending[0]["outcome"].is_null(),
        "still pending: {pending:?}"
    );
    assert!(
        pending[0]["approval"]["preview"]
            .as_str()
            .unwrap()
            .contains("- fn main() {}\n+ fn main() { run() }"),
        "{:?}",
        pending[0]["approval"]
    );

    let approved = hark(&daemon.sandbox, &["approve", &id[..8], "--scope", "action"]);
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "fn main() { run() }\n"
    );
    let item = &approvals(&daemon)[0];
    assert_eq!(outcome(item), ("approved", "action"));
    assert_eq!(item["replied_by"], "cli");
}

/// Claude Code's Bash sandbox is pinned into the user's own `--settings`
/// file, which is read once and otherwise kept; one that is not JSON stops
/// the run before the agent starts.
#[test]
fn a_read_only_wrap_merges_the_sandbox_into_the_users_settings_file() {
    let nobody = sandbox();
    let log = nobody.path("fake.log");
    let theirs = nobody.path("settings.json");
    let mine = json!({"env": {"MINE": "1"}, "sandbox": {"autoAllowBashIfSandboxed": true}});
    std::fs::write(&theirs, mine.to_string()).unwrap();
    let work = nobody.path("work");
    std::fs::create_dir(&work).unwrap();
    let wrap = |settings: &Path| {
        nobody
            .hark(["run", "--read-only", "--wrap", "--"])
            .current_dir(&work)
            .arg(fake_claude())
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .arg("--settings")
            .arg(settings)
            .env("FAKE_CLAUDE_LOG", &log)
            .output()
            .unwrap()
    };
    let out = wrap(&theirs);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = &invocations(&log)[0];
    let count = run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| *a == "--settings")
        .count();
    assert_eq!(count, 1, "the CLI reads only the last --settings");
    let merged: Value = serde_json::from_str(&flag(run, "--settings").unwrap()).unwrap();
    assert_eq!(merged["env"], json!({"MINE": "1"}));
    assert_eq!(merged["sandbox"]["enabled"], true);
    assert_eq!(merged["sandbox"]["failIfUnavailable"], true);
    assert_eq!(merged["sandbox"]["autoAllowBashIfSandboxed"], false);
    assert_eq!(
        merged["sandbox"]["filesystem"]["denyWrite"],
        json!([work.canonicalize().unwrap()]),
        "with nobody to approve a write, Bash may not write where it works"
    );

    std::fs::write(&theirs, "not json").unwrap();
    let out = wrap(&theirs);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not JSON"));
    assert_eq!(
        invocations(&log).len(),
        1,
        "the agent was not started again"
    );
}
