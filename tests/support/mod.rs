//! Helpers that drive the real `hark` binary the way an agent host does:
//! a daemon with a scripted prompter on a temp socket, and MCP clients
//! (rmcp's) that spawn `hark mcp-operator-ask`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The text every unanswered tool error starts with.
pub const NOT_ANSWERED: &str = "operator did not answer; proceed without this input";

/// How long any test waits for an event before failing.
pub const PATIENCE: Duration = Duration::from_secs(20);

pub fn hark() -> &'static str {
    env!("CARGO_BIN_EXE_hark")
}

/// Lines a child wrote, collected by a reader thread; tests wait on them.
#[derive(Clone, Default)]
pub struct Lines {
    inner: Arc<(Mutex<Vec<String>>, Condvar)>,
}

impl Lines {
    pub fn follow(stream: impl std::io::Read + Send + 'static) -> Lines {
        let lines = Lines::default();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                let (lock, cvar) = &*sink.inner;
                lock.lock().unwrap().push(line);
                cvar.notify_all();
            }
        });
        lines
    }

    pub fn all(&self) -> Vec<String> {
        self.inner.0.lock().unwrap().clone()
    }

    /// Waits until a line satisfies `pred` and returns it.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_until(what, |lines| lines.iter().find(|l| pred(l)).cloned())
    }

    /// Waits until `found` finds something in the lines so far (it is asked
    /// again on each new line) and returns what it found.
    pub fn wait_until<T>(&self, what: &str, found: impl Fn(&[String]) -> Option<T>) -> T {
        self.wait_within(PATIENCE, found).unwrap_or_else(|| {
            panic!(
                "timed out waiting for {what}; saw:\n{}",
                self.all().join("\n")
            )
        })
    }

    /// Like [`Lines::wait_until`], but gives up after `within` (`None`).
    pub fn wait_within<T>(
        &self,
        within: Duration,
        found: impl Fn(&[String]) -> Option<T>,
    ) -> Option<T> {
        let (lock, cvar) = &*self.inner;
        let deadline = Instant::now() + within;
        let mut lines = lock.lock().unwrap();
        loop {
            if let Some(hit) = found(&lines) {
                return Some(hit);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            lines = cvar.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// Waits until an item of `session` is asked; returns its id.
    pub fn question_id(&self, session: &str) -> String {
        let asked = self.wait_event("operator.question.asked", &[("session_id", session)]);
        asked["question_id"].as_str().unwrap().to_owned()
    }

    /// Waits for a JSON log event with this message whose fields match `fields`.
    pub fn wait_event(&self, message: &str, fields: &[(&str, &str)]) -> Value {
        let line = self.wait_for(&format!("event {message} {fields:?}"), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["message"] == message
                    && fields.iter().all(|(k, want)| v[*k].as_str() == Some(*want))
            })
        });
        serde_json::from_str(&line).unwrap()
    }
}

/// A `hark serve --prompter script:…` on a socket in its own temp dir.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub child: Child,
    pub log: Lines,
}

impl Daemon {
    pub fn start(script: Value) -> Daemon {
        Daemon::start_with(script, &[])
    }

    pub fn start_with(script: Value, args: &[&str]) -> Daemon {
        Daemon::start_in(tempfile::tempdir().unwrap(), script, args)
    }

    /// Starts a daemon whose socket and store live in `dir`.
    pub fn start_in(dir: tempfile::TempDir, script: Value, args: &[&str]) -> Daemon {
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let socket = dir.path().join("run").join("hark.sock");
        let mut child = Command::new(hark())
            .arg("serve")
            .arg(format!("--prompter=script:{}", script_path.display()))
            .arg("--socket")
            .arg(&socket)
            .args(["--log-format", "json"])
            .args(args)
            .env("HARK_CONFIG", dir.path().join("no-config.toml"))
            .env("HARK_DATA_DIR", dir.path().join("data"))
            // The fake agents of the runs the daemon starts log here.
            .env("FAKE_CLAUDE_LOG", dir.path().join("fake.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Lines::follow(child.stderr.take().unwrap());
        log.wait_event("hark is serving the operator", &[]);
        Daemon {
            dir,
            socket,
            child,
            log,
        }
    }

    /// Kills the daemon with SIGKILL (no clean-up at all) and hands back its
    /// directory, so a new daemon can start on the same store.
    pub fn kill9(mut self) -> tempfile::TempDir {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.dir, dir)
    }

    /// Runs `hark` with this daemon's socket and store, returning its output.
    pub fn hark(&self, args: &[&str]) -> std::process::Output {
        Command::new(hark())
            .args(args)
            .env("HARK_SOCKET", &self.socket)
            .env("HARK_DATA_DIR", self.dir.path().join("data"))
            .env("HARK_CONFIG", self.dir.path().join("no-config.toml"))
            .output()
            .unwrap()
    }

    /// `hark inbox --all --json`, parsed.
    pub fn inbox(&self) -> Vec<Value> {
        let out = self.hark(&["inbox", "--all", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// Spawns `hark mcp-operator-ask` as an agent host would, pointed at `socket`.
pub async fn agent(socket: &Path, env: &[(&str, &str)]) -> Agent {
    let mut cmd = tokio::process::Command::new(hark());
    cmd.arg("mcp-operator-ask")
        .env("HARK_ASK_SOCK", socket)
        .env("HARK_CONFIG", socket.with_extension("no-config.toml"))
        .env_remove("HARK_SESSION_ID")
        .env_remove("HARK_ASK_TIMEOUT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let transport = TokioChildProcess::builder(cmd)
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

pub fn questions(qs: &[Value]) -> Value {
    json!({ "questions": qs })
}
pub mod desktop;

/// The fake `claude -p` (tests/fake-claude), built next to `hark`.
pub fn fake_claude() -> PathBuf {
    let path = Path::new(hark()).with_file_name("fake-claude");
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

/// `hark run` with the fake agent, against `socket`; the fake logs to `log`.
pub fn hark_run(socket: &Path, log: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(hark())
        .arg("run")
        .args(["--agent"])
        .arg(fake_claude())
        .args(args)
        .env("HARK_SOCKET", socket)
        .env("HARK_CONFIG", socket.with_extension("no-config.toml"))
        .env("FAKE_CLAUDE_LOG", log)
        .env("FAKE_MARKER", "inherited")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Starts `hark run ARGS --agent fake-claude -- PROMPT` against `socket`,
/// in the background, its output piped.
pub fn spawn_run(socket: &Path, args: &[&str], prompt: &str) -> Child {
    Command::new(hark())
        .arg("run")
        .args(args)
        .arg("--agent")
        .arg(fake_claude())
        .args(["--", prompt])
        .env("HARK_SOCKET", socket)
        .env("HARK_CONFIG", socket.with_extension("no-config.toml"))
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
