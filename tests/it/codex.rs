//! `hark run` dispatching Codex: the fake `codex exec` (tests/fake-codex,
//! which emulates what was measured on Codex 0.171.0: the `-c` overrides,
//! the filtered environment of MCP servers, approval `never`, the cut at
//! `tool_timeout_sec`, the `--json` events; docs/src/agents/codex.md), attached
//! and headless, read-only, wrapped and detached.

use std::path::PathBuf;
use std::process::Output;

use crate::run::run_of;
use crate::support::*;
use serde_json::{Value, json};

/// The fake, as `codex` in the sandbox: the kind is read from the name.
fn codex(sandbox: &Sandbox) -> PathBuf {
    fake_named(sandbox, "fake-codex", "codex")
}

/// `hark run ARGS` with `codex` as the agent; the fake logs to `fake.log`.
fn codex_run(sandbox: &Sandbox, args: &[&str]) -> Output {
    codex_run_with(sandbox, args, "")
}

/// [`codex_run`] with `stdin` on its standard input (a conversation's
/// next messages).
fn codex_run_with(sandbox: &Sandbox, args: &[&str], stdin: &str) -> Output {
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(codex(sandbox))
        .args(args)
        .env("FAKE_CODEX_LOG", sandbox.path("fake.log"))
        .env("FAKE_MARKER", "inherited")
        .env("CODEX_HOME", sandbox.path("codex-home"));
    output_with_stdin(&mut run, stdin)
}

/// What the fake logged: its runs, and each MCP server's environment.
fn logged(sandbox: &Sandbox) -> (Vec<Value>, Vec<Value>) {
    invocations(&sandbox.path("fake.log"))
        .into_iter()
        .partition(|line| line.get("argv").is_some())
}

/// The text the model got back from each `ask`.
fn tool_results(sandbox: &Sandbox) -> Vec<String> {
    invocations(&sandbox.path("fake.log"))
        .iter()
        .filter_map(|line| line["tool_result"].as_str().map(str::to_owned))
        .collect()
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

#[test]
fn an_attached_codex_gets_the_bridge_in_its_overrides_and_the_operators_answer() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let prompt = format!("{}\nSAY chose it\nEXIT 3", ask_line());
    let out = codex_run(
        sandbox,
        &["--session", "cx", "--timeout", "20", "--", &prompt],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "the agent's status: {}",
        stderr(&out)
    );
    assert_eq!(
        tool_results(sandbox),
        [r#"{"answers":{"Which database?":"SQLite"}}"#]
    );
    assert!(stdout(&out).contains("chose it"), "{}", stdout(&out));
    let shown = stderr(&out);
    assert!(
        shown.contains("? asks the operator: [Database] Which database?"),
        "{shown}"
    );
    assert!(
        shown.contains("hark: the agent finished (20 tokens in, 10 out)"),
        "{shown}"
    );
    assert!(
        shown.contains("times out and the agent proceeds"),
        "Codex does not park: {shown}"
    );

    let (runs, servers) = logged(sandbox);
    let run = &runs[0];
    let words = argv(run);
    assert_eq!(words[0], "exec");
    assert_eq!(words[words.len() - 3..], ["--json", "--", prompt.as_str()]);
    let operator = &run["config"]["mcp_servers"]["operator"];
    assert_eq!(
        operator["command"],
        bin_dir().join("hark-ask").to_str().unwrap()
    );
    assert_eq!(operator["args"], json!(["mcp-operator-ask"]));
    assert_eq!(operator["default_tools_approval_mode"], "approve");
    assert_eq!(operator["required"], true);
    // Codex's cut is above hark's wait, so no question can outlast it.
    assert_eq!(operator["tool_timeout_sec"], 80);
    let instructions = run["config"]["developer_instructions"].as_str().unwrap();
    assert!(
        instructions.contains("mcp__operator__ask"),
        "{instructions}"
    );
    assert_eq!(run["env"]["HARK_SESSION_ID"], "cx");
    assert!(run["env"]["HARK_ASK_SOCK"].is_string());
    // Its MCP server got the variables hark named, and nothing else of the run's.
    let env = &servers[0]["env"];
    assert_eq!(env["HARK_ASK_SOCK"], run["env"]["HARK_ASK_SOCK"]);
    assert_eq!(env["HARK_SESSION_ID"], "cx");
    assert!(env["FAKE_MARKER"].is_null(), "filtered: {env}");

    let recorded = run_of(&daemon, "cx");
    assert_eq!(recorded["exit_code"], 3);
    assert_eq!(recorded["result"], "chose it");
    assert!(
        recorded["command"].as_str().unwrap().contains("codex exec"),
        "{recorded}"
    );
}

#[test]
fn a_headless_codex_is_told_to_proceed_and_gets_no_server() {
    let sandbox = sandbox();
    let out = codex_run(&sandbox, &["--", &format!("{}\nSAY alone", ask_line())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, servers) = logged(&sandbox);
    assert!(
        runs[0]["config"].get("mcp_servers").is_none(),
        "{}",
        runs[0]
    );
    assert!(servers.is_empty());
    let instructions = runs[0]["config"]["developer_instructions"]
        .as_str()
        .unwrap();
    assert!(
        instructions.contains("No operator is available"),
        "{instructions}"
    );
    assert!(runs[0]["env"]["HARK_ASK_SOCK"].is_null());
    assert!(
        stderr(&out).contains("unknown MCP server 'operator'"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("alone"));
}

#[test]
fn stdout_carries_codexs_last_message_once_and_the_others_go_to_stderr() {
    let nobody = sandbox();
    let out = codex_run(&nobody, &["--", "SAY looking around\nSAY Using SQLite."]);
    let shown = stderr(&out);
    assert!(out.status.success(), "{shown}");
    assert_eq!(stdout(&out), "Using SQLite.\n");
    assert!(shown.contains("looking around\n"), "{shown}");
    assert!(!shown.contains("Using SQLite."), "shown once: {shown}");
}

/// Codex refuses to work outside a git repository: hark passes the
/// refusal on with what to do, and never adds `--skip-git-repo-check`
/// itself.
#[test]
fn codex_outside_a_git_repository_is_refused_with_a_hint_and_no_flag_added() {
    let nobody = sandbox();
    let outside = hark_harness::scratch();
    let dir = outside.path().to_str().unwrap();
    let out = codex_run(&nobody, &["--cwd", dir, "--", "SAY hello"]);
    let shown = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "Codex's status: {shown}");
    assert!(
        shown.contains(
            "Not inside a trusted directory and --skip-git-repo-check was not specified."
        ),
        "{shown}"
    );
    assert!(
        shown.contains("hark: Codex works only inside a git repository")
            && shown.contains("hint: run it in the project's repository")
            && shown.contains("hark run --wrap -- codex exec --skip-git-repo-check"),
        "{shown}"
    );
    assert_eq!(stdout(&out), "");
    let (runs, _) = logged(&nobody);
    assert!(
        !argv(&runs[0]).contains(&"--skip-git-repo-check"),
        "{}",
        runs[0]
    );

    // In a repository it works, and nothing is hinted.
    let project = outside.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(&project)
        .status()
        .unwrap();
    assert!(init.success());
    let out = codex_run(
        &nobody,
        &["--cwd", project.to_str().unwrap(), "--", "SAY hello"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
    assert!(!stderr(&out).contains("hint:"), "{}", stderr(&out));

    // The flag is the user's to give, through --wrap.
    let codex = codex(&nobody);
    let out = codex_run(
        &nobody,
        &[
            "--cwd",
            dir,
            "--wrap",
            "--",
            codex.to_str().unwrap(),
            "exec",
            "--skip-git-repo-check",
            "--json",
            "SAY hello",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
}

#[test]
fn a_question_nobody_answers_reaches_codex_as_harks_text_before_its_own_cut() {
    let daemon = serve(json!({}));
    let prompt = format!("{}\nSAY carried on", ask_line());
    let out = codex_run(
        &daemon.sandbox,
        &["--timeout", "0.5", "--on-timeout", "proceed", "--", &prompt],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&daemon.sandbox);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains(NOT_ANSWERED),
        "hark's text, not Codex's timeout: {results:?}"
    );
    assert!(stdout(&out).contains("carried on"));
}

#[test]
fn read_only_codex_runs_in_its_read_only_sandbox_and_a_write_fails() {
    let daemon = serve(json!({}));
    let target = daemon.sandbox.path("written.txt");
    let prompt = format!("WRITE {} hello\nSAY could not", target.display());
    let out = codex_run(&daemon.sandbox, &["--read-only", "--", &prompt]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _) = logged(&daemon.sandbox);
    assert_eq!(runs[0]["sandbox"], "read-only");
    assert!(
        runs[0]["config"]["developer_instructions"]
            .as_str()
            .unwrap()
            .contains("read-only")
    );
    assert!(!target.exists(), "the sandbox refused the write");
    assert!(
        stderr(&out).contains("read-only in Codex's sandbox, which refuses every write"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(": failed"), "{}", stderr(&out));
}

#[test]
fn wrap_merges_into_the_users_codex_exec_line() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let codex = codex(sandbox);
    let prompt = ask_line();
    let out = codex_run(
        sandbox,
        &[
            "--read-only",
            "--wrap",
            "--",
            codex.to_str().unwrap(),
            "exec",
            "--json",
            "--full-auto",
            "-c",
            "model=\"o3\"",
            "-c",
            "mcp_servers.operator.command=\"/bin/false\"",
            &prompt,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _) = logged(sandbox);
    let run = &runs[0];
    assert_eq!(
        run["config"]["model"], "o3",
        "the user's own override stays"
    );
    assert_eq!(
        run["config"]["mcp_servers"]["operator"]["command"],
        bin_dir().join("hark-ask").to_str().unwrap(),
        "the user's operator server is replaced"
    );
    assert_eq!(run["sandbox"], "read-only");
    assert!(!argv(run).contains(&"--full-auto"), "{run}");
    assert_eq!(*argv(run).last().unwrap(), prompt.as_str());
    assert_eq!(
        tool_results(sandbox),
        [r#"{"answers":{"Which database?":"SQLite"}}"#]
    );

    let interactive = codex_run(
        sandbox,
        &["--wrap", "--", codex.to_str().unwrap(), "fix it"],
    );
    assert!(!interactive.status.success());
    assert!(
        stderr(&interactive).contains("codex exec"),
        "{}",
        stderr(&interactive)
    );
}

#[test]
fn a_detached_codex_run_is_the_daemons_and_listed_with_its_answer() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let prompt = format!("{}\nSAY detached done", ask_line());
    let out = sandbox
        .hark([
            "run",
            "--detach",
            "--session",
            "cx-detached",
            "--agent-kind",
            "codex",
            "--agent",
        ])
        .arg(bin_dir().join("fake-codex"))
        .args(["--", &prompt])
        .env("FAKE_CODEX_LOG", sandbox.path("fake.log"))
        .env("CODEX_HOME", sandbox.path("codex-home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run_id = stdout(&out).trim().to_owned();
    let ended = daemon
        .log
        .wait_event("dispatched run ended", &[("run_id", &run_id)]);
    assert_eq!(ended["exit_code"], 0);
    let run = run_of(&daemon, "cx-detached");
    assert_eq!(run["status"], "finished");
    assert_eq!(run["result"], "detached done");
    assert_eq!(
        tool_results(sandbox),
        [r#"{"answers":{"Which database?":"SQLite"}}"#]
    );
    let (runs, _) = logged(sandbox);
    assert_eq!(
        argv(&runs[0])[0],
        "exec",
        "--agent-kind made a fake-codex a Codex"
    );
}

#[test]
fn the_printed_codex_config_attaches_hark_to_a_codex_started_by_hand() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let printed = succeed(sandbox, &["mcp-config", "--for", "codex"]);
    let words: Vec<String> = stdout(&printed).lines().map(str::to_owned).collect();
    let out = sandbox
        .command(codex(sandbox))
        .arg("exec")
        .args(&words)
        .args(["--json", &ask_line()])
        .env("FAKE_CODEX_LOG", sandbox.path("fake.log"))
        .env("CODEX_HOME", sandbox.path("codex-home"))
        .env("HARK_SOCKET", sandbox.socket())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        tool_results(sandbox),
        [r#"{"answers":{"Which database?":"SQLite"}}"#]
    );
}

#[test]
fn a_codex_conversation_resumes_its_thread_turn_after_turn() {
    let nobody = sandbox();
    let out = codex_run_with(
        &nobody,
        &["--verb", "converse", "--", "SAY first turn"],
        "SAY second turn\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _) = logged(&nobody);
    assert_eq!(runs.len(), 2);
    assert!(runs[0]["resume"].is_null());
    let thread = runs[0]["thread"].as_str().unwrap().to_owned();
    assert_eq!(runs[1]["resume"], thread.as_str());
    let second = argv(&runs[1]);
    assert_eq!(
        second[second.len() - 4..],
        ["--json", "--", thread.as_str(), "SAY second turn"]
    );
    assert!(second.contains(&"resume"));
    assert!(stdout(&out).contains("first turn") && stdout(&out).contains("second turn"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_new_run_forms_codex_is_dispatched_and_asks_through_the_modal() {
    use crate::desktop::{dispatched, ended_well, inbox_with_the_fake_agent};
    use fantoccini::Locator;
    // `codex` on the app's PATH is the fake; the config names fake-claude.
    let bin = hark_harness::scratch();
    std::os::unix::fs::symlink(bin_dir().join("fake-codex"), bin.path().join("codex")).unwrap();
    let log = bin.path().join("fake.log");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let desktop = inbox_with_the_fake_agent(&[
        ("PATH", &path),
        ("FAKE_CODEX_LOG", log.to_str().unwrap()),
        ("CODEX_HOME", bin.path().join("home").to_str().unwrap()),
    ])
    .await;
    desktop.fill("#dispatch-prompt", &ask_line()).await;
    desktop.fill("#dispatch-session", "form-codex").await;
    desktop
        .client
        .find(Locator::Css("#dispatch-agent option[value='codex']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    desktop.click("#dispatch-start").await;
    let run_id = dispatched(&desktop);
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.pick("SQLite").await;
    desktop.click("#submit").await;
    ended_well(&desktop, &run_id);
    let results: Vec<Value> = invocations(&log)
        .into_iter()
        .filter(|line| line.get("tool_result").is_some())
        .collect();
    assert_eq!(
        results[0]["tool_result"],
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    let runs = hark(&desktop.sandbox, &["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["session_id"], "form-codex");
    assert!(
        runs[0]["command"]
            .as_str()
            .unwrap()
            .starts_with("codex exec"),
        "{}",
        runs[0]
    );
    desktop.stop().await;
}
