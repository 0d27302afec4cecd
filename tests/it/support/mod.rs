//! What the tests share beyond the harness (`hark-harness`): the build under
//! test, a sandbox and a daemon per test, the MCP clients (rmcp's) an agent
//! host spawns, the questions the tests ask, and `hark run` with the fake
//! agent and what it recorded.

mod agents;
pub mod desktop;

pub use agents::{MockApi, real_agent, until, until_showing};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};

pub use hark_harness::{Daemon, Lines, Sandbox};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The text every unanswered tool error starts with.
pub const NOT_ANSWERED: &str = "operator did not answer; proceed without this input";

/// Where `hark` and its siblings (`hark-app`, `fake-claude`) are built.
pub fn bin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hark"))
        .parent()
        .expect("hark is in a directory")
}

/// A fresh sandbox for the build under test. The fake agent of any run
/// started in it logs to `fake.log` there, unless told otherwise.
pub fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new("hark-test-", bin_dir())
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let log = sandbox.path("fake.log");
    sandbox.with_env("FAKE_CLAUDE_LOG", log)
}

/// `hark serve --prompter script:…` in a fresh sandbox, logging JSON events.
pub fn serve(script: Value) -> Daemon {
    serve_in(&sandbox(), script, &[])
}

/// [`serve`] with more arguments.
pub fn serve_with(script: Value, args: &[&str]) -> Daemon {
    serve_in(&sandbox(), script, args)
}

/// [`serve_with`] in `sandbox`: on its store, with its config.
pub fn serve_in(sandbox: &Sandbox, script: Value, args: &[&str]) -> Daemon {
    let args = [&["--log-format", "json"], args].concat();
    Daemon::start(sandbox, &script, &args)
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)))
}

/// Runs `hark ARGS` in `sandbox` (on its socket and store) to its end.
pub fn hark(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox.hark(args).output().unwrap()
}

/// `hark ARGS…`, which must succeed.
pub fn succeed(sandbox: &Sandbox, args: &[&str]) -> Output {
    let out = hark(sandbox, args);
    assert!(
        out.status.success(),
        "hark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `hark answer ID --pick LABEL`, which must succeed.
pub fn answer(sandbox: &Sandbox, id: &str, label: &str) {
    succeed(sandbox, &["answer", id, "--pick", label]);
}

/// The fake agent `fake` (`fake-codex`, `fake-opencode`) linked as `name`
/// in the sandbox: `hark run` reads an agent's kind from its name.
pub fn fake_named(sandbox: &Sandbox, fake: &str, name: &str) -> PathBuf {
    let fake = bin_dir().join(fake);
    assert!(
        fake.exists(),
        "{} is missing: build the workspace first",
        fake.display()
    );
    let named = sandbox.path(name);
    if !named.exists() {
        std::os::unix::fs::symlink(&fake, &named).unwrap();
    }
    named
}

/// `hark inbox --all --json` in `sandbox`, parsed.
pub fn inbox(sandbox: &Sandbox) -> Vec<Value> {
    let out = hark(sandbox, &["inbox", "--all", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A client that counts progress notifications.
#[derive(Clone, Default)]
pub struct Host {
    pub progress: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Host {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

pub type Agent = RunningService<RoleClient, Host>;

/// Spawns `hark mcp-operator-ask` as an agent host would, in `sandbox` and
/// pointed at its socket; `env` is added. A shell stands for the agent and
/// starts the server, so the test process is the agent's parent, outside
/// it (like the operator's terminal), and may answer what it asks.
pub async fn agent(sandbox: &Sandbox, env: &[(&str, &str)]) -> Agent {
    let mut cmd = sandbox.command("sh");
    // (A background command's stdin is /dev/null unless given back.)
    cmd.args(["-c", "exec 3<&0; \"$0\" mcp-operator-ask <&3 3<&- & wait"])
        .arg(sandbox.bin("hark"));
    cmd.env("HARK_ASK_SOCK", sandbox.socket());
    for (k, v) in env {
        cmd.env(k, v);
    }
    connect(cmd).await
}

/// An MCP client of the server `cmd` starts, as an agent host spawns it.
pub async fn connect(cmd: std::process::Command) -> Agent {
    let transport = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
        .0;
    Host::default().serve(transport).await.unwrap()
}

fn params(args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new("ask").with_arguments(map)
}

/// Calls `ask` and returns the result.
pub async fn ask(agent: &Agent, args: Value) -> CallToolResult {
    agent.call_tool(params(args)).await.unwrap()
}

/// Starts an `ask` call that can be cancelled.
pub async fn ask_cancellable(agent: &Agent, args: Value) -> RequestHandle<RoleClient> {
    agent
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params(args))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap()
}

/// The text of a tool result's one content block.
pub fn text(result: &CallToolResult) -> String {
    let block = result.content.first().expect("a content block");
    block.as_text().expect("text content").text.clone()
}

/// A question in AskUserQuestion's shape.
pub fn question(text: &str, header: &str, labels: &[&str], multi: bool) -> Value {
    json!({
        "question": text,
        "header": header,
        "multiSelect": multi,
        "options": labels.iter().map(|l| json!({"label": l, "description": format!("pick {l}")})).collect::<Vec<_>>(),
    })
}

/// The single-select question most tests ask; its default is Postgres.
pub fn db() -> Value {
    question(
        "Which database?",
        "Database",
        &["Postgres (Recommended)", "SQLite"],
        false,
    )
}

/// The multi-select question most tests ask; its default is Auth.
pub fn features() -> Value {
    question(
        "Which features?",
        "Features",
        &["Auth (Recommended)", "Billing", "Search"],
        true,
    )
}

pub fn questions(qs: &[Value]) -> Value {
    json!({ "questions": qs })
}

/// The fake `claude -p` (tests/fake-claude), built next to `hark`.
pub fn fake_claude() -> PathBuf {
    let path = bin_dir().join("fake-claude");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p fake-claude` first",
        path.display()
    );
    path
}

pub fn ask_line() -> String {
    format!("ASK {}", questions(&[db()]))
}

/// `hark run` with the fake agent in `sandbox`; the fake logs to `log`.
pub fn hark_run(sandbox: &Sandbox, log: &Path, args: &[&str], stdin: &str) -> Output {
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(fake_claude())
        .args(args)
        .env("FAKE_CLAUDE_LOG", log)
        .env("FAKE_MARKER", "inherited");
    output_with_stdin(&mut run, stdin)
}

/// Runs `command` to its end with `stdin` on its standard input.
pub fn output_with_stdin(command: &mut std::process::Command, stdin: &str) -> Output {
    spawn_with_stdin(command, stdin).wait_with_output().unwrap()
}

/// Starts `command` with `stdin` written to its input (then closed), its
/// output piped.
pub fn spawn_with_stdin(command: &mut std::process::Command, stdin: &str) -> Child {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child
}

/// Starts `hark run ARGS --agent fake-claude -- PROMPT` in `sandbox`, in
/// the background, its output piped.
pub fn spawn_run(sandbox: &Sandbox, args: &[&str], prompt: &str) -> Child {
    sandbox
        .hark(["run"])
        .args(args)
        .arg("--agent")
        .arg(fake_claude())
        .args(["--", prompt])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The fake's recorded invocations.
pub fn invocations(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value after `flag` in a recorded argv.
pub fn flag(invocation: &Value, name: &str) -> Option<String> {
    let argv: Vec<&str> = invocation["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    argv.iter()
        .position(|a| *a == name)
        .map(|i| argv[i + 1].to_owned())
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
