//! The real OpenCode (1.18.33, which `scripts/setup --tests` installs in
//! `tests/agents`; `HARK_TEST_OPENCODE` names another), offline: `hark run --agent opencode` against the mock Chat
//! Completions API (`bench/mock-openai-chat/mock_chat.py`), which scripts
//! the model's call of `operator_ask` and logs every request, so the tool
//! result OpenCode sent back to the model can be read. Without either,
//! each test says SKIPPED and passes (in CI and under the test command it
//! fails: `hark_harness::skip`).

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::support::*;

/// The mock model API, scripted to call `operator_ask` once, then say
/// `Using SQLite.`.
struct Mock(MockApi);

impl Mock {
    fn start(dir: &Path) -> Mock {
        let call = json!({"name": "operator_ask", "input": questions(&[db()])}).to_string();
        let args = ["--final", "Using SQLite.", "--tool-json", &call];
        Mock(MockApi::start("mock-openai-chat/mock_chat.py", dir, &args))
    }

    /// The user's OpenCode config: the mock as its only provider.
    fn config(&self) -> String {
        json!({
            "model": "mock/m",
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", self.0.port), "apiKey": "x"},
                "models": {"m": {}}}},
        })
        .to_string()
    }

    /// Every request's messages, in order.
    fn requests(&self) -> Vec<Vec<Value>> {
        self.0
            .bodies()
            .iter()
            .filter_map(|b| b["messages"].as_array().cloned())
            .collect()
    }

    /// The `tool` messages' contents: what the model read of each call.
    fn tool_results(&self) -> Vec<String> {
        let last = self.requests().pop().unwrap_or_default();
        last.iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

/// `hark run --agent OPENCODE ARGS -- PROMPT`, offline, against `mock`.
fn run(daemon: &Daemon, opencode: &Path, mock: &Mock, args: &[&str]) -> Output {
    let project = daemon.sandbox.path("project");
    std::fs::create_dir_all(&project).unwrap();
    daemon
        .sandbox
        .hark(["run", "--agent"])
        .arg(opencode)
        .arg("--cwd")
        .arg(&project)
        .args(args)
        .args(["--", "Pick the database"])
        .env("OPENCODE_CONFIG_CONTENT", mock.config())
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_real_opencode_asks_through_hark_and_reads_the_answer() {
    let Some(opencode) = real_agent("opencode", "HARK_TEST_OPENCODE") else {
        return;
    };
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let mock = Mock::start(&daemon.sandbox.path(""));
    let out = run(&daemon, &opencode, &mock, &["--timeout", "60"]);
    let shown = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{shown}");
    assert_eq!(
        mock.tool_results(),
        [r#"{"answers":{"Which database?":"SQLite"}}"#],
        "{shown}"
    );
    assert_eq!(stdout(&out), "Using SQLite.\n", "{shown}");
    assert!(
        shown.contains("? asks the operator: [Database] Which database?"),
        "{shown}"
    );
    // The clause reached the model, in the message, naming the tool as it sees it.
    let requests = mock.requests();
    let user = requests
        .iter()
        .flatten()
        .find(|m| m["role"] == "user" && m["content"].to_string().contains("Pick the database"))
        .unwrap_or_else(|| panic!("no prompt in {requests:?}"));
    assert!(
        user["content"].to_string().contains("operator_ask"),
        "{user}"
    );
}

#[test]
fn the_real_opencode_reads_harks_text_when_nobody_answers() {
    let Some(opencode) = real_agent("opencode", "HARK_TEST_OPENCODE") else {
        return;
    };
    let daemon = serve(json!({}));
    let mock = Mock::start(&daemon.sandbox.path(""));
    let out = run(
        &daemon,
        &opencode,
        &mock,
        &["--timeout", "2", "--on-timeout", "proceed"],
    );
    let shown = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{shown}");
    let results = mock.tool_results();
    assert_eq!(results.len(), 1, "{shown}");
    assert!(results[0].contains(NOT_ANSWERED), "{results:?}");
    assert_eq!(stdout(&out), "Using SQLite.\n", "{shown}");
}
