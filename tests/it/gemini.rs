//! The real Gemini CLI (0.61.0, which `scripts/setup --tests` installs in
//! `tests/agents`; `HARK_TEST_GEMINI` names another), offline, pointed at
//! hark by hand as the book says (docs/src/guides/by-hand.md):
//! `~/.gemini/settings.json` holds what `hark mcp-config --for gemini` prints, plus the API-key auth, and `gemini
//! -p` runs against the mock Gemini API (`bench/mock-gemini/mock_gemini.py`),
//! which scripts the model's call of `mcp_operator_ask` and logs every
//! request, so the functionResponse the CLI sent back can be read
//! (docs/src/agents/gemini.md). Without either binary, each test says SKIPPED
//! and passes (in CI and under the test command it fails:
//! `hark_harness::skip`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// How long the mock may take to listen, and `gemini -p` to run to its end
/// (it starts in 2.5–6 s; a run took 5–10 s when measured).
const PATIENCE: Duration = Duration::from_secs(120);

/// The question the model asks, in the shape of hark's `ask`.
fn which_database() -> Value {
    json!({"questions": [{"question": "Which database?", "header": "DB",
        "options": [{"label": "SQLite", "description": "a file"},
                    {"label": "Postgres", "description": "a server"}],
        "multiSelect": false}]})
}

/// The mock Gemini API, scripted to call `mcp_operator_ask` once, then say
/// `Using SQLite.`.
struct Mock(MockApi);

impl Mock {
    fn start(dir: &Path) -> Mock {
        let call = json!({"name": "mcp_operator_ask", "args": which_database()}).to_string();
        let args = ["--final", "Using SQLite.", "--tool-json", &call];
        Mock(MockApi::start("mock-gemini/mock_gemini.py", dir, &args))
    }

    fn port(&self) -> u16 {
        self.0.port
    }

    /// Every request's body, in order.
    fn requests(&self) -> Vec<Value> {
        self.0.bodies()
    }

    /// The functionResponse parts of the last request that carried any:
    /// what the model read of each call.
    fn function_responses(&self) -> Vec<Value> {
        let parts = |body: &Value| -> Vec<Value> {
            body["contents"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p.get("functionResponse").cloned())
                .collect()
        };
        self.requests()
            .iter()
            .map(parts)
            .rfind(|found| !found.is_empty())
            .unwrap_or_default()
    }
}

/// Writes the sandbox's `~/.gemini/settings.json`: the JSON `hark
/// mcp-config --for gemini` prints, merged with the API-key auth `gemini -p`
/// needs against a base URL, and no usage statistics (the only connection
/// beside the mock's).
fn settings(sandbox: &Sandbox) {
    let printed = succeed(sandbox, &["mcp-config", "--for", "gemini"]);
    let mut settings: Value = serde_json::from_slice(&printed.stdout).unwrap();
    settings["security"] = json!({"auth": {"selectedType": "gemini-api-key"}});
    settings["privacy"] = json!({"usageStatisticsEnabled": false});
    let dir = sandbox.path("home/.gemini");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// What a run of `gemini -p` left.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// `gemini -p go --skip-trust --output-format json` in a project of the
/// sandbox, against `mock`, its stdin /dev/null (an open one holds its exit).
fn run(daemon: &Daemon, gemini: &Path, mock: &Mock) -> Run {
    let sandbox = &daemon.sandbox;
    settings(sandbox);
    let project = sandbox.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let (out, err) = (sandbox.path("gemini.out"), sandbox.path("gemini.err"));
    let mut command = sandbox.command(gemini);
    // None of the caller's Gemini or Google settings (another auth, model,
    // settings file), nor GitHub Actions' marker, with which the CLI passes
    // MCP servers only an allow-list of variables.
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["GEMINI_", "GOOGLE_"].iter().any(|p| text.starts_with(p))
            || text == "GITHUB_SHA"
            || text == "SURFACE"
        {
            command.env_remove(&name);
        }
    }
    let start = Instant::now();
    let mut child = command
        .args(["-p", "go", "--skip-trust", "--output-format", "json"])
        .current_dir(&project)
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port()),
        )
        .env("GEMINI_API_KEY", "x")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("gemini starts");
    let status = hark_harness::process::wait_or_kill(&mut child, PATIENCE);
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_default();
    let run = Run {
        code: status.and_then(|s| s.code()),
        stdout: read(out),
        stderr: read(err),
        took: start.elapsed(),
    };
    eprintln!("gemini -p ran {:.1} s", run.took.as_secs_f64());
    assert!(
        run.took < PATIENCE,
        "gemini -p outstayed {PATIENCE:?}: {}",
        run.stderr
    );
    run
}

/// The one history item: settled already, as the run that read its
/// outcome has ended.
fn settled(daemon: &Daemon) -> Value {
    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(!items[0]["outcome"].is_null(), "{items:?}");
    items.into_iter().next().unwrap()
}

#[test]
fn the_real_gemini_asks_through_hark_and_reads_the_answer() {
    let Some(gemini) = real_agent("gemini", "HARK_TEST_GEMINI") else {
        return;
    };
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let mock = Mock::start(&daemon.sandbox.path(""));
    let run = run(&daemon, &gemini, &mock);
    let shown = format!("{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, Some(0), "{shown}");
    let results = mock.function_responses();
    assert_eq!(results.len(), 1, "{results:?}\n{shown}");
    assert_eq!(results[0]["name"], "mcp_operator_ask", "{results:?}");
    let output = results[0]["response"]["output"]
        .as_str()
        .unwrap_or_else(|| {
            panic!("no output: {results:?}");
        });
    assert_eq!(
        output,
        "<untrusted_context>\n{\"answers\":{\"Which database?\":\"SQLite\"}}\n</untrusted_context>",
        "{results:?}"
    );
    let ended: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{shown}"));
    assert_eq!(ended["response"], "Using SQLite.", "{ended}");
    assert_eq!(
        ended["stats"]["tools"]["byName"]["mcp_operator_ask"]["count"], 1,
        "{ended}"
    );
    let item = settled(&daemon);
    assert_eq!(
        item["outcome"],
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []}),
        "{item}"
    );
}

#[test]
fn the_real_gemini_reads_harks_text_when_nobody_answers() {
    let Some(gemini) = real_agent("gemini", "HARK_TEST_GEMINI") else {
        return;
    };
    let daemon = serve_with(json!({}), &["--ask-timeout", "2"]);
    let mock = Mock::start(&daemon.sandbox.path(""));
    let run = run(&daemon, &gemini, &mock);
    let shown = format!("{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, Some(0), "{shown}");
    let results = mock.function_responses();
    assert_eq!(results.len(), 1, "{results:?}\n{shown}");
    // An isError result reaches the model as the CLI's error text, which
    // holds hark's.
    let error = results[0]["response"]["error"].as_str().unwrap_or_else(|| {
        panic!("no error: {results:?}");
    });
    assert!(error.contains(NOT_ANSWERED), "{error}");
    assert!(error.contains("timed out after 2 s"), "{error}");
    let item = settled(&daemon);
    assert_eq!(item["outcome"]["outcome"], "timed_out", "{item}");
}
