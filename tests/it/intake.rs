//! Intake end to end: `hark run --intake FILE` asks authored questions through
//! the operator (a real `hark serve` with a scripted prompter answering by
//! prompt text) before the fake `claude -p` starts, and puts the answers
//! into its prompt; headless it does not start the agent.

use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::{Value, json};

fn intake_file(dir: &Path, when: &str) -> PathBuf {
    let path = dir.join("intake.json");
    let intake = json!({
        "preamble": "Release checklist.",
        "questions": [
            {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
             "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]},
            {"id": "notify", "prompt": "Tell the team?",
             "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}]}
        ],
        "when": when
    });
    std::fs::write(&path, intake.to_string()).unwrap();
    path
}

/// The `-p` prompt of each recorded agent start.
fn prompts(log: &Path) -> Vec<String> {
    invocations(log)
        .iter()
        .map(|run| flag(run, "-p").unwrap_or_default())
        .collect()
}

fn intake_items(daemon: &Daemon) -> Vec<Value> {
    inbox(&daemon.sandbox)
        .into_iter()
        .filter(|i| i["asker"]["command"] == "hark run (intake)")
        .collect()
}

#[test]
fn the_agent_starts_after_the_intake_with_its_answers_in_the_prompt() {
    let daemon = serve(json!({"Which environment?": "Production", "Tell the team?": "No"}));
    let intake = intake_file(daemon.sandbox.root(), "thread-start");
    let log = daemon.sandbox.path("fake.log");
    let out = hark_run(
        &daemon.sandbox,
        &log,
        &[
            "--intake",
            intake.to_str().unwrap(),
            "--session",
            "s-intake",
            "--",
            "ship it",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompts = prompts(&log);
    assert_eq!(prompts.len(), 1);
    assert!(
        prompts[0].starts_with(
            "Release checklist.\nThe operator answered these questions before the work started:\n"
        ),
        "{}",
        prompts[0]
    );
    assert!(
        prompts[0].contains("- Which environment? (env): prod\n"),
        "{}",
        prompts[0]
    );
    assert!(
        prompts[0].contains("- Tell the team? (notify): no\n"),
        "{}",
        prompts[0]
    );
    assert!(prompts[0].ends_with("\nship it"), "{}", prompts[0]);
    let items = intake_items(&daemon);
    assert_eq!(items.len(), 1, "one ask call carries both questions");
    assert_eq!(items[0]["outcome"]["outcome"], "answered");
    assert_eq!(items[0]["session_id"], "s-intake");
    assert!(items[0]["run_id"].is_string(), "filed under the run");
}

#[test]
fn every_turn_asks_again_before_the_next_converse_turn_and_thread_start_does_not() {
    let daemon = serve(json!({"Which environment?": "Staging", "Tell the team?": "Yes"}));
    for (when, expected) in [("every-turn", 2), ("thread-start", 1)] {
        let intake = intake_file(daemon.sandbox.root(), when);
        let log = daemon.sandbox.path(format!("{when}.log"));
        let before = intake_items(&daemon).len();
        let out = hark_run(
            &daemon.sandbox,
            &log,
            &[
                "--verb",
                "converse",
                "--intake",
                intake.to_str().unwrap(),
                "--",
                "hello",
            ],
            "and now?\n",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let prompts = prompts(&log);
        assert_eq!(prompts.len(), 2, "two turns");
        assert_eq!(intake_items(&daemon).len() - before, expected, "{when}");
        let blocks = prompts
            .iter()
            .filter(|p| p.contains("(env): staging"))
            .count();
        assert_eq!(blocks, expected, "{when}: {prompts:?}");
        assert!(prompts[1].ends_with("and now?"), "{}", prompts[1]);
    }
}

#[test]
fn headless_the_agent_does_not_start_and_hark_reports_not_answered() {
    let nobody = sandbox();
    let intake = intake_file(nobody.root(), "thread-start");
    let log = nobody.path("fake.log");
    let out = hark_run(
        &nobody,
        &log,
        &["--intake", intake.to_str().unwrap(), "--", "go"],
        "",
    );
    assert_eq!(out.status.code(), Some(3));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["outcome"], "not_answered");
    assert_eq!(report["missing"], json!(["env", "notify"]));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--answer env=VALUE"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(invocations(&log).is_empty(), "the agent never started");
}

#[test]
fn answers_on_the_command_line_start_the_agent_with_nobody_attached() {
    let nobody = sandbox();
    let intake = intake_file(nobody.root(), "thread-start");
    let log = nobody.path("fake.log");
    let path = intake.to_str().unwrap();
    let args = [
        "--intake",
        path,
        "--answer",
        "env=prod",
        "--answer",
        "notify=yes",
        "--",
        "go",
    ];
    let out = hark_run(&nobody, &log, &args, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompts = prompts(&log);
    assert!(prompts[0].contains("(env): prod") && prompts[0].contains("(notify): yes"));

    let bad = hark_run(
        &nobody,
        &log,
        &["--intake", path, "--answer", "env=moon", "--", "go"],
        "",
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("takes one of staging, prod"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert_eq!(invocations(&log).len(), 1, "a bad answer starts nothing");
}
