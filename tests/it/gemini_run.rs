//! `hark run` dispatching Gemini CLI: the fake `gemini -p`
//! (tests/fake-gemini, which emulates what was measured on Gemini CLI
//! 0.61.0: settings from `$GEMINI_CLI_HOME/.gemini/settings.json`, a
//! server's tool offered only when it is trusted, secrets kept from its
//! environment, the call's `timeout` a hard cut, the `stream-json`
//! events; docs/src/agents/gemini.md), attached and headless, read-only,
//! wrapped; and, when `HARK_TEST_GEMINI` names it or it is installed, the
//! real Gemini CLI against the mock Gemini API.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use crate::run::run_of;
use crate::support::*;
use serde_json::{Value, json};

/// The fake, as `gemini` in the sandbox: the kind is read from the name.
fn gemini(sandbox: &Sandbox) -> PathBuf {
    fake_named(sandbox, "fake-gemini", "gemini")
}

/// Writes the user's own `~/.gemini/settings.json`, which hark's server
/// is merged into, and a file beside it that the run's home links to.
fn users_settings(sandbox: &Sandbox) {
    let dir = sandbox.path("home/.gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
        "mcpServers": {"mine": {"command": "/nonexistent/mine"}}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    std::fs::write(dir.join("installation_id"), "fake-id").unwrap();
}

/// `hark run ARGS` with `gemini` as the agent; the fake logs to `fake.log`.
fn gemini_run(sandbox: &Sandbox, args: &[&str]) -> Output {
    users_settings(sandbox);
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(gemini(sandbox))
        .args(args)
        .env("FAKE_GEMINI_LOG", sandbox.path("fake.log"))
        .env("FAKE_MARKER", "inherited")
        .env("GEMINI_API_KEY", "x")
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
        .env_remove("GITHUB_SHA");
    output_with_stdin(&mut run, "")
}

/// What the fake logged: its runs, each MCP server's environment, and the
/// text the model got back from each tool with whether it was an error.
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
            let text = l["tool_result"].as_str().unwrap().to_owned();
            (text, l["is_error"] == true)
        })
        .collect();
    (pick("argv"), pick("server"), results)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn argv(run: &Value) -> Vec<&str> {
    let words = run["argv"].as_array().unwrap();
    words.iter().map(|a| a.as_str().unwrap()).collect()
}

const ANSWERED: &str = r#"{"answers":{"Which database?":"SQLite"}}"#;

#[test]
fn an_attached_gemini_gets_the_trusted_server_in_its_home_and_the_operators_answer() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let prompt = format!("{}\nSAY chose it\nEXIT 3", ask_line());
    let out = gemini_run(
        sandbox,
        &["--session", "gm", "--timeout", "20", "--", &prompt],
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
        shown.contains("hark: the agent finished in 1.2 s (20 tokens in, 10 out)"),
        "{shown}"
    );
    assert!(
        shown.contains("Gemini CLI has no hook that pauses a call"),
        "{shown}"
    );

    let run = &runs[0];
    let words = argv(run);
    assert_eq!(
        words[1..],
        ["--output-format", "stream-json", "--skip-trust"]
    );
    let clause = words[0].strip_suffix(&format!("\n\n{prompt}")).unwrap();
    assert!(
        clause.starts_with("--prompt=") && clause.contains("mcp_operator_ask"),
        "the clause before the prompt names the tool as Gemini's model sees it: {clause}"
    );
    assert!(!clause.contains("mcp__operator__ask"), "{clause}");
    // Its own home, in the run's directory, with the user's settings and
    // files.
    let home = run["home"].as_str().unwrap();
    assert!(
        home.ends_with("gemini-home") && !home.starts_with(sandbox.path("home").to_str().unwrap()),
        "{home}"
    );
    let settings = &run["settings"];
    assert_eq!(
        settings["security"]["auth"]["selectedType"],
        "gemini-api-key"
    );
    assert_eq!(
        settings["mcpServers"]["mine"]["command"],
        "/nonexistent/mine"
    );
    let operator = &settings["mcpServers"]["operator"];
    assert_eq!(
        operator["command"],
        bin_dir().join("hark-ask").to_str().unwrap()
    );
    assert_eq!(operator["args"], json!(["mcp-operator-ask"]));
    assert_eq!(operator["trust"], true);
    // Above hark's wait, as Gemini's cut is hard.
    assert_eq!(operator["timeout"], 80_000);
    assert_eq!(run["env"]["HARK_SESSION_ID"], "gm");
    // Its server got hark's variables, and not the API key.
    let server = servers.iter().find(|s| s["server"] == "operator");
    let env = &server.unwrap_or_else(|| panic!("{servers:?}"))["env"];
    assert_eq!(env["HARK_ASK_SOCK"], run["env"]["HARK_ASK_SOCK"]);
    assert_eq!(env["FAKE_MARKER"], "inherited");
    assert!(env["GEMINI_API_KEY"].is_null(), "{env}");

    let recorded = run_of(&daemon, "gm");
    assert_eq!(recorded["exit_code"], 3);
    assert_eq!(recorded["result"], "chose it");
    assert!(recorded["cost_usd"].is_null(), "{recorded}");
}

#[test]
fn a_question_nobody_answers_reaches_gemini_as_harks_text() {
    let daemon = serve(json!({}));
    let prompt = format!("{}\nSAY carried on", ask_line());
    let out = gemini_run(
        &daemon.sandbox,
        &["--timeout", "0.5", "--on-timeout", "proceed", "--", &prompt],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, _, results) = logged(&daemon.sandbox);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].0.contains(NOT_ANSWERED) && results[0].1,
        "{results:?}"
    );
    let shown = stderr(&out);
    assert!(
        shown.contains(&format!("! mcp_operator_ask: {NOT_ANSWERED}")),
        "{shown}"
    );
    assert_eq!(stdout(&out), "carried on\n");
}

#[test]
fn a_headless_gemini_is_told_to_proceed_and_gets_no_server() {
    let nobody = sandbox();
    let out = gemini_run(&nobody, &["--", &format!("{}\nSAY alone", ask_line())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, servers, results) = logged(&nobody);
    assert!(
        runs[0]["settings"]["mcpServers"].get("operator").is_none(),
        "{}",
        runs[0]
    );
    assert_eq!(
        runs[0]["home"],
        nobody.path("home").to_str().unwrap(),
        "the user's own"
    );
    assert_eq!(servers.len(), 1, "only the user's: {servers:?}");
    assert!(argv(&runs[0])[0].contains("No operator is available"));
    assert!(runs[0]["env"]["HARK_ASK_SOCK"].is_null());
    assert_eq!(
        results,
        [("Tool \"mcp_operator_ask\" not found.".to_owned(), true)]
    );
    assert_eq!(stdout(&out), "alone\n");
}

#[test]
fn read_only_gemini_runs_without_yolo_and_a_write_is_not_offered() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let gemini = gemini(sandbox);
    let target = sandbox.path("written.txt");
    let prompt = format!("WRITE {} hello\nSAY could not", target.display());
    let out = gemini_run(
        sandbox,
        &[
            "--read-only",
            "--wrap",
            "--",
            gemini.to_str().unwrap(),
            "--yolo",
            "-p",
            &prompt,
            "--approval-mode",
            "yolo",
            "--output-format",
            "stream-json",
            "--skip-trust",
        ],
    );
    let shown = stderr(&out);
    assert!(out.status.success(), "{shown}");
    let (runs, _, _) = logged(sandbox);
    let words = argv(&runs[0]);
    assert_eq!(words[0], "-p");
    assert!(words[1].contains("read-only") && words[1].ends_with(&prompt));
    assert_eq!(
        words[2..],
        ["--output-format", "stream-json", "--skip-trust"],
        "no yolo"
    );
    assert!(!target.exists(), "the write was not offered");
    assert!(
        shown.contains("read-only: gemini -p offers no tool that writes"),
        "{shown}"
    );
    assert!(
        shown.contains("! write_file: Tool \"write_file\" not found."),
        "{shown}"
    );
}

#[test]
fn wrap_takes_the_users_gemini_p_line_and_refuses_any_other() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let gemini = gemini(sandbox);
    let gemini = gemini.to_str().unwrap();
    let prompt = ask_line();
    let line = [
        gemini,
        "-m",
        "x",
        "-p",
        &prompt,
        "--output-format",
        "stream-json",
    ];
    let trusted = [&["--wrap", "--"][..], &line, &["--skip-trust"]].concat();
    let out = gemini_run(sandbox, &trusted);
    assert!(out.status.success(), "{}", stderr(&out));
    let (runs, _, results) = logged(sandbox);
    let words = argv(&runs[0]);
    assert_eq!(words[..3], ["-m", "x", "-p"]);
    assert!(words[3].contains("mcp_operator_ask") && words[3].ends_with(&prompt));
    assert_eq!(
        words[4..],
        ["--output-format", "stream-json", "--skip-trust"]
    );
    assert_eq!(results, [(ANSWERED.to_owned(), false)]);

    let untrusted = gemini_run(sandbox, &[&["--wrap", "--"][..], &line].concat());
    assert_eq!(untrusted.status.code(), Some(55), "{}", stderr(&untrusted));
    assert!(
        stderr(&untrusted).contains("hint: add --skip-trust"),
        "{}",
        stderr(&untrusted)
    );

    let other = gemini_run(sandbox, &["--wrap", "--", gemini, "--resume", "latest"]);
    assert_eq!(other.status.code(), Some(1), "{}", stderr(&other));
    let said = stderr(&other);
    assert!(
        said.contains("the command line must be `gemini -p PROMPT …`")
            && said.contains("hint: hark run --wrap -- gemini -p"),
        "{said}"
    );
    assert_eq!(logged(sandbox).0.len(), 1, "neither ran past its start");
}

/// The real Gemini CLI: `hark run --agent gemini` against `hark serve`
/// and the mock Gemini API (`bench/mock-gemini/mock_gemini.py`), scripted
/// to call `mcp_operator_ask` once, then say `Using SQLite.`; the
/// functionResponse the CLI sent back is read from the mock's log.
#[test]
fn the_real_gemini_run_by_hark_asks_and_reads_the_answer() {
    let Some(gemini) = real_agent("gemini", "HARK_TEST_GEMINI") else {
        return;
    };
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let call = json!({"name": "mcp_operator_ask", "args": questions(&[db()])}).to_string();
    let args = ["--final", "Using SQLite.", "--tool-json", &call];
    let mock = MockApi::start("mock-gemini/mock_gemini.py", &sandbox.path(""), &args);
    let dir = sandbox.path("home/.gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let project = sandbox.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut run = sandbox.hark(["run", "--agent"]);
    // None of the caller's Gemini or Google settings, nor GitHub Actions'
    // marker.
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["GEMINI_", "GOOGLE_"].iter().any(|p| text.starts_with(p)) || text == "GITHUB_SHA" {
            run.env_remove(&name);
        }
    }
    let out = run
        .arg(&gemini)
        .arg("--cwd")
        .arg(&project)
        .args(["--timeout", "60", "--", "Pick the database"])
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port),
        )
        .env("GEMINI_API_KEY", "x")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = stderr(&out);
    assert!(out.status.success(), "{shown}");
    let responses = function_responses(&mock.bodies());
    assert_eq!(responses.len(), 1, "{responses:?}\n{shown}");
    assert_eq!(responses[0]["name"], "mcp_operator_ask", "{responses:?}");
    assert_eq!(
        responses[0]["response"]["output"],
        format!("<untrusted_context>\n{ANSWERED}\n</untrusted_context>"),
        "{responses:?}"
    );
    assert_eq!(stdout(&out), "Using SQLite.\n", "{shown}");
    assert!(
        shown.contains("? asks the operator: [Database] Which database?"),
        "{shown}"
    );
}

/// The functionResponse parts of the last request that carried any.
fn function_responses(bodies: &[Value]) -> Vec<Value> {
    let parts = |body: &Value| -> Vec<Value> {
        body["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p.get("functionResponse").cloned())
            .collect()
    };
    bodies
        .iter()
        .map(parts)
        .rfind(|found| !found.is_empty())
        .unwrap_or_default()
}
