//! `hark run` dispatching OpenCode: the fake `opencode run`
//! (tests/fake-opencode, which emulates what was measured on OpenCode
//! 1.18.33: the config in `OPENCODE_CONFIG_CONTENT`, the permissions in
//! `OPENCODE_PERMISSION`, the whole environment passed to MCP servers, the
//! call's timeout restarted by progress, the `--format json` events;
//! docs/src/agents/opencode.md), attached and headless, read-only, wrapped,
//! conversing; and, when `HARK_TEST_OPENCODE` names it, the real OpenCode
//! against the mock Chat Completions API (`real`).

mod real;

use std::path::PathBuf;
use std::process::Output;

use crate::run::run_of;
use crate::support::*;
use serde_json::{Value, json};

/// The fake, as `opencode` in the sandbox: the kind is read from the name.
fn opencode(sandbox: &Sandbox) -> PathBuf {
    fake_named(sandbox, "fake-opencode", "opencode")
}

/// The user's own config, which hark's is merged over.
const USERS_CONFIG: &str = r#"{"model":"mock/m","mcp":{"mine":{"type":"local","command":["/nonexistent/mine"],"enabled":false}}}"#;

/// `hark run ARGS` with `opencode` as the agent, the user's own
/// `OPENCODE_*` variables set; the fake logs to `fake.log`.
fn opencode_run(sandbox: &Sandbox, args: &[&str], stdin: &str) -> Output {
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(opencode(sandbox))
        .args(args)
        .env("FAKE_OPENCODE_LOG", sandbox.path("fake.log"))
        .env("FAKE_MARKER", "inherited")
        .env("XDG_DATA_HOME", sandbox.path("opencode-data"))
        .env("OPENCODE_CONFIG_CONTENT", USERS_CONFIG)
        .env(
            "OPENCODE_PERMISSION",
            r#"{"operator_ask":"ask","webfetch":"deny"}"#,
        );
    output_with_stdin(&mut run, stdin)
}

/// What the fake logged: its runs, each MCP server's environment, and the
/// text the model got back from each `ask` with whether it was an error.
fn logged(sandbox: &Sandbox) -> (Vec<Value>, Vec<Value>, Vec<(String, bool)>) {
    let lines = invocations(&sandbox.path("fake.log"));
    let pick = |key: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l.get(key).is_some())
            .cloned()
            .collect()
    };
    let results = pick("tool_result")
        .iter()
        .map(|l| {
            (
                l["tool_result"].as_str().unwrap().to_owned(),
                l["is_error"] == true,
            )
        })
        .collect();
    (pick("argv"), pick("server"), results)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn argv(run: &Value) -> Vec<&str> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

const ANSWERED: &str = r#"{"answers":{"Which database?":"SQLite"}}"#;

#[test]
fn an_attached_opencode_gets_the_server_in_its_config_and_the_operators_answer() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let prompt = format!("{}\nSAY chose it\nEXIT 3", ask_line());
    let out = opencode_run(
        sandbox,
        &["--session", "oc", "--timeout", "20", "--", &prompt],
        "",
    );
    let shown = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "the agent's status: {shown}");
    let (runs, servers, results) = logged(sandbox);
    assert_eq!(results, [(ANSWERED.to_owned(), false)]);
    assert_eq!(stdout(&out), "chose it\n");
    assert!(
        shown.contains("? asks the operator: [Database] Which database?"),
        "{shown}"
    );
    assert!(
        shown.contains("hark: the agent finished (20 tokens in, 10 out)"),
        "{shown}"
    );
    assert!(
        shown.contains("OpenCode has no hook that pauses a call"),
        "OpenCode does not park: {shown}"
    );

    let run = &runs[0];
    let words = argv(run);
    assert_eq!(words[0], "run");
    assert!(
        words[1].contains("operator_ask") && !words[1].contains("mcp__operator__ask"),
        "the clause names the tool as OpenCode's model sees it: {}",
        words[1]
    );
    assert_eq!(
        words[2..],
        ["--format", "json", "--", prompt.as_str()],
        "the prompt is after --"
    );
    let config = &run["config"];
    assert_eq!(config["model"], "mock/m", "the user's config stays");
    assert_eq!(config["mcp"]["mine"]["enabled"], false);
    let operator = &config["mcp"]["operator"];
    assert_eq!(
        operator["command"],
        json!([
            bin_dir().join("hark-ask").to_str().unwrap(),
            "mcp-operator-ask"
        ])
    );
    assert_eq!(operator["type"], "local");
    // Above hark's wait, so OpenCode never cuts a question first.
    assert_eq!(operator["timeout"], 80_000);
    assert_eq!(
        config["permission"],
        json!({"operator_ask": "allow", "webfetch": "deny"}),
        "hark's allow wins over the user's ask, the rest stays"
    );
    assert_eq!(run["env"]["HARK_SESSION_ID"], "oc");
    // Its MCP server got OpenCode's whole environment.
    let env = &servers[0]["env"];
    assert_eq!(env["HARK_ASK_SOCK"], run["env"]["HARK_ASK_SOCK"]);
    assert_eq!(env["FAKE_MARKER"], "inherited");

    let recorded = run_of(&daemon, "oc");
    assert_eq!(recorded["exit_code"], 3);
    assert_eq!(recorded["result"], "chose it");
    assert!(
        recorded["command"]
            .as_str()
            .unwrap()
            .contains("opencode run"),
        "{recorded}"
    );
}

#[test]
fn a_question_nobody_answers_reaches_opencode_as_harks_text() {
    let daemon = serve(json!({}));
    let prompt = format!("{}\nSAY carried on", ask_line());
    let out = opencode_run(
        &daemon.sandbox,
        &["--timeout", "0.5", "--on-timeout", "proceed", "--", &prompt],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, _, results) = logged(&daemon.sandbox);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].0.contains(NOT_ANSWERED) && results[0].1,
        "hark's text, as the tool's error: {results:?}"
    );
    assert!(
        stderr(&out).contains(&format!("! operator_ask: {NOT_ANSWERED}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "carried on\n");
}

#[test]
fn a_headless_opencode_is_told_to_proceed_and_gets_no_server() {
    let nobody = sandbox();
    let out = opencode_run(&nobody, &["--", &format!("{}\nSAY alone", ask_line())], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, servers, results) = logged(&nobody);
    assert!(
        runs[0]["config"]["mcp"].get("operator").is_none(),
        "{}",
        runs[0]
    );
    assert!(servers.is_empty());
    assert_eq!(
        runs[0]["config"]["permission"],
        json!({"operator_ask": "ask", "webfetch": "deny"}),
        "the user's own, untouched"
    );
    assert!(argv(&runs[0])[1].contains("No operator is available"));
    assert!(runs[0]["env"]["HARK_ASK_SOCK"].is_null());
    assert!(
        results[0].0.contains("unavailable tool 'operator_ask'"),
        "{results:?}"
    );
    assert_eq!(stdout(&out), "alone\n");
}

#[test]
fn read_only_opencode_is_denied_edit_and_bash_and_a_write_fails() {
    let daemon = serve(json!({}));
    let target = daemon.sandbox.path("written.txt");
    let prompt = format!("WRITE {} hello\nSAY could not", target.display());
    let out = opencode_run(&daemon.sandbox, &["--read-only", "--", &prompt], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _, _) = logged(&daemon.sandbox);
    let permission = &runs[0]["config"]["permission"];
    assert_eq!(permission["edit"], "deny");
    assert_eq!(permission["bash"], "deny");
    assert!(argv(&runs[0])[1].contains("read-only"));
    assert!(!target.exists(), "the write was refused");
    let shown = stderr(&out);
    assert!(
        shown.contains("read-only: OpenCode's edit and bash tools are denied"),
        "{shown}"
    );
    assert!(
        shown.contains("! write: Model tried to call unavailable tool"),
        "{shown}"
    );
}

#[test]
fn wrap_takes_the_users_opencode_run_line_and_refuses_any_other() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let opencode = opencode(sandbox);
    let prompt = ask_line();
    let out = opencode_run(
        sandbox,
        &[
            "--wrap",
            "--",
            opencode.to_str().unwrap(),
            "--print-logs",
            "run",
            "--format",
            "json",
            "--model",
            "mock/other",
            &prompt,
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _, results) = logged(sandbox);
    let words = argv(&runs[0]);
    assert_eq!(words[..2], ["--print-logs", "run"]);
    assert!(words[2].contains("operator_ask"), "the clause after run");
    assert_eq!(
        words[3..],
        ["--format", "json", "--model", "mock/other", &prompt]
    );
    assert_eq!(results, [(ANSWERED.to_owned(), false)]);

    let other = opencode_run(
        sandbox,
        &["--wrap", "--", opencode.to_str().unwrap(), "serve"],
        "",
    );
    assert_eq!(other.status.code(), Some(1), "{}", stderr(&other));
    assert!(
        stderr(&other).contains("the command line must be `opencode run …`")
            && stderr(&other).contains("hint: hark run --wrap -- opencode run"),
        "{}",
        stderr(&other)
    );
    assert_eq!(logged(sandbox).0.len(), 1, "the refused line never ran");
}

#[test]
fn an_opencode_conversation_resumes_its_session_turn_after_turn() {
    let nobody = sandbox();
    let out = opencode_run(
        &nobody,
        &["--verb", "converse", "--", "SAY first turn"],
        "SAY second turn\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _, _) = logged(&nobody);
    assert_eq!(runs.len(), 2);
    assert!(runs[0]["session"].is_null());
    let first = argv(&runs[0]);
    assert!(first[1].contains("conversation"), "{first:?}");
    let second = argv(&runs[1]);
    let session = runs[1]["session"].as_str().unwrap();
    assert!(session.starts_with("ses_fake"), "{session}");
    assert_eq!(
        second,
        [
            "run",
            "--format",
            "json",
            "--session",
            session,
            "--",
            "SAY second turn"
        ],
        "the session has the clause already"
    );
    assert_eq!(stdout(&out), "first turn\nsecond turn\n");
}

#[test]
fn the_printed_opencode_config_attaches_hark_to_an_opencode_started_by_hand() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let printed = succeed(sandbox, &["mcp-config", "--for", "opencode"]);
    let note = stderr(&printed);
    assert!(note.contains("progress notifications restart it"), "{note}");
    let out = sandbox
        .command(opencode(sandbox))
        .args(["run", "--format", "json", &ask_line()])
        .env("OPENCODE_CONFIG_CONTENT", stdout(&printed))
        .env("FAKE_OPENCODE_LOG", sandbox.path("fake.log"))
        .env("XDG_DATA_HOME", sandbox.path("opencode-data"))
        .env("HARK_SOCKET", sandbox.socket())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(logged(sandbox).2, [(ANSWERED.to_owned(), false)]);
}
