//! `fake-opencode`: behaves like `opencode run` where hark depends on it
//! (what that is, and how each fact was measured on the real CLI, OpenCode
//! 1.18.33: docs/src/agents/opencode.md).
//!
//! - parses `[--print-logs] run [OPTIONS] [--] MESSAGE…`: `--format
//!   default|json`, `-s`/`--session ID`, `-m`/`--model`, `--agent`,
//!   `--variant`, `--title`, `--dir` (each with a value), `--auto` (and its
//!   aliases), `--print-logs`, `--pure`, `--thinking`; any other flag is
//!   refused (exit status 1); without `run`, it refuses too;
//! - joins the message's words as `run` does, wrapping each word with a
//!   space in `"…"`, and appends whatever stdin holds when it is not a
//!   terminal (read to its end first, as `run` does);
//! - its config is `OPENCODE_CONFIG_CONTENT` (JSON), with
//!   `OPENCODE_PERMISSION` merged into its `permission`;
//! - starts each MCP server of `mcp.NAME` (`type: "local"`, `command` an
//!   array, `environment`, `enabled`, `timeout` in ms) with its whole
//!   environment plus `environment`, as a real MCP client; one that cannot
//!   start is left out, and the run goes on;
//! - a server's tool is the model's `NAME_TOOL`. Its permission (the
//!   tool's name in `permission`, else `*`): `deny` leaves it out, so the
//!   model cannot call it; `ask` is auto-rejected (unless `--auto`) and the
//!   run ends there, exit 0; else it is called, bounded by `timeout` (60 s
//!   when unset), which each progress notification restarts; after the
//!   reply it sends `notifications/cancelled` for the finished call;
//! - follows a script, the message's last word, one command a line: `ASK
//!   {json}` calls `operator_ask`; `SAY text` is the model's text; `WRITE
//!   path text` calls the `write` tool (permission `edit`); `EXIT n` sets
//!   the exit status; `HANG` waits until killed;
//! - prints, with `--format json`, `step_start`, `tool_use` (once the call
//!   has finished), `text` and `step_finish` (`tool-calls`, then `stop`),
//!   each with `sessionID`; otherwise the text alone;
//! - sessions: saved to `$XDG_DATA_HOME/opencode/fake-sessions/<id>.json`
//!   (`$HOME/.local/share` without it); `--session ID` goes on in one, and
//!   an unknown id fails (`Error: Session not found`, exit status 1);
//! - when `FAKE_OPENCODE_LOG` names a file, appends its argv, the message,
//!   the hark environment, the config and the permissions it got, one JSON
//!   line per run, each server's hark environment, and each tool result.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use fake_common::identity::{Identity, identity};
use fake_common::log::{Log, hark_env, own_hark_env};
use fake_common::mcp::{self, SDK_TIMED_OUT, Server};
use fake_common::script::{self, Agent};
use fake_common::session::{Sessions, env_dir};
use fake_common::words::{MissingValue, Words};
use fake_common::{OrExit, Runtime};
use rmcp::model::CancelledNotificationParam;
use serde_json::{Map, Value, json};

/// Where the log goes when the tests ask for one.
const LOG: Log = Log::new("FAKE_OPENCODE_LOG");

/// What `run` says of a call the permission `ask` auto-rejected (measured).
const REJECTED: &str = "The user rejected permission to use this specific tool call.";

/// What is wrong with the command line.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error(transparent)]
    MissingValue(#[from] MissingValue),
    #[error("fake-opencode: {0} is not emulated")]
    Flag(String),
    #[error("fake-opencode: only `opencode run` is emulated")]
    NotRun,
}

#[derive(Debug, Default)]
struct Args {
    json: bool,
    session: Option<String>,
    auto: bool,
    words: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Args, ArgsError> {
    let mut args = Args::default();
    let mut words = Words::new(argv);
    let mut run = false;
    while let Some(word) = words.next() {
        if word.arg == "--" && run {
            args.words.extend(words.rest().cloned());
            break;
        }
        match word.name {
            "--format" => args.json = words.value(&word)? == "json",
            "-s" | "--session" => args.session = Some(words.value(&word)?),
            "-m" | "--model" | "--agent" | "--variant" | "--title" | "--dir" | "--log-level" => {
                words.value(&word)?;
            }
            "--auto" | "--dangerously-skip-permissions" | "--yolo" => args.auto = true,
            "--print-logs" | "--pure" | "--thinking" => {}
            "run" if !run => run = true,
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(ArgsError::Flag(flag.to_owned()));
            }
            word if run => args.words.push(word.to_owned()),
            _ => return Err(ArgsError::NotRun),
        }
    }
    if !run {
        return Err(ArgsError::NotRun);
    }
    Ok(args)
}

/// The message as `run` makes it of its words (measured).
fn message(words: &[String]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| match w.contains(' ') {
            true => format!("\"{w}\""),
            false => w.clone(),
        })
        .collect();
    quoted.join(" ")
}

/// The config: `OPENCODE_CONFIG_CONTENT`, with `OPENCODE_PERMISSION`
/// merged into its `permission`.
fn config() -> Result<Value, String> {
    let read = |name: &str| -> Result<Value, String> {
        match std::env::var(name) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{name}: {e}")),
            Err(_) => Ok(json!({})),
        }
    };
    let mut config = read("OPENCODE_CONFIG_CONTENT")?;
    let extra = read("OPENCODE_PERMISSION")?;
    if let (Some(permission), Some(config)) = (extra.as_object(), config.as_object_mut()) {
        let merged = config
            .entry("permission")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("permission is not an object")?;
        merged.extend(permission.clone());
    }
    Ok(config)
}

/// Starts one `mcp.NAME` server, with the whole environment and its own.
async fn start(name: &str, entry: &Value) -> Result<Server, String> {
    let command: Vec<&str> = entry["command"]
        .as_array()
        .ok_or("no command")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let (program, args) = command.split_first().ok_or("an empty command")?;
    let mut process = tokio::process::Command::new(program);
    process.args(args);
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    for (key, value) in entry["environment"].as_object().into_iter().flatten() {
        env.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
    }
    LOG.line(&json!({"server": name, "env": hark_env(&env, |_| false)}));
    process.env_clear().envs(&env);
    mcp::start(process).await.map_err(|e| e.to_string())
}

/// Where the fake keeps its sessions.
fn sessions() -> Sessions {
    Sessions::new(env_dir("XDG_DATA_HOME", ".local/share").join("opencode/fake-sessions"))
}

struct Run {
    json: bool,
    auto: bool,
    session: String,
    permission: Map<String, Value>,
    servers: BTreeMap<String, (Server, Value)>,
    parts: u64,
    status: u8,
    /// An auto-rejected permission ended the turn.
    ended: bool,
}

impl Run {
    fn emit(&mut self, kind: &str, part: Value) {
        self.parts += 1;
        if !self.json {
            return;
        }
        let mut part = part;
        part["id"] = json!(format!("prt_fake_{}", self.parts));
        part["sessionID"] = json!(self.session);
        println!(
            "{}",
            json!({"type": kind, "timestamp": 0, "sessionID": self.session, "part": part})
        );
    }

    fn permission(&self, key: &str) -> &str {
        let rule = |k: &str| self.permission.get(k).and_then(Value::as_str);
        rule(key).or_else(|| rule("*")).unwrap_or("allow")
    }

    /// A tool call, once it has finished; it ends the step, and the model
    /// is asked again in the next.
    fn tool_use(&mut self, tool: &str, input: &Value, outcome: Result<String, String>) {
        let state = match outcome {
            Ok(output) => json!({"status": "completed", "input": input, "output": output}),
            Err(error) => json!({"status": "error", "input": input, "error": error}),
        };
        self.emit(
            "tool_use",
            json!({"type": "tool", "tool": tool, "callID": format!("call_{}", self.parts), "state": state}),
        );
        self.emit(
            "step_finish",
            json!({"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": {"input": 10, "output": 5}}),
        );
        self.emit("step_start", json!({"type": "step-start"}));
    }

    /// The permission of `key` for a call of `tool`: `Err` when the call
    /// does not happen.
    fn allowed(&mut self, tool: &str, key: &str) -> Result<(), String> {
        match self.permission(key) {
            "deny" => Err(format!("Model tried to call unavailable tool '{tool}'.")),
            "ask" if !self.auto => {
                eprintln!("! permission requested: {tool} (*); auto-rejecting");
                self.ended = true;
                Err(REJECTED.to_owned())
            }
            _ => Ok(()),
        }
    }

    /// The script, in one step that ends with `stop`.
    async fn follow(&mut self, script: &str) {
        self.emit("step_start", json!({"type": "step-start"}));
        if !script::follow(self, script).await {
            return;
        }
        self.emit(
            "step_finish",
            json!({"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {"input": 20, "output": 10}}),
        );
    }
}

impl Agent for Run {
    /// The model's call of `operator_ask`.
    async fn ask(&mut self, input: Value) {
        let tool = "operator_ask";
        let outcome = match self.servers.contains_key("operator") {
            false => Err(format!("Model tried to call unavailable tool '{tool}'.")),
            true => match self.allowed(tool, tool) {
                Err(e) => Err(e),
                Ok(()) => {
                    let (server, entry) = &self.servers["operator"];
                    call(server, entry, &input).await
                }
            },
        };
        LOG.tool_result(&outcome);
        self.tool_use(tool, &input, outcome);
    }

    fn say(&mut self, text: &str) {
        if !self.json {
            println!("{text}");
        }
        self.emit("text", json!({"type": "text", "text": text}));
    }

    /// The `write` tool, under the permission `edit`.
    fn write(&mut self, path: &str, text: &str) {
        let input = json!({"filePath": path, "content": text});
        let outcome = self.allowed("write", "edit").and_then(|()| {
            std::fs::write(path, text)
                .map(|()| "Wrote file successfully.".to_owned())
                .map_err(|e| e.to_string())
        });
        self.tool_use("write", &input, outcome);
    }

    fn exit(&mut self, status: u8) {
        self.status = status;
    }

    fn ended(&self) -> bool {
        self.ended
    }
}

/// Calls `ask` as OpenCode does: bounded by the server's `timeout`, which
/// each progress notification restarts; then cancels the finished call.
async fn call(server: &Server, entry: &Value, input: &Value) -> Result<String, String> {
    let arguments = mcp::arguments(input).map_err(|e| e.to_string())?;
    let ms = entry["timeout"].as_u64().unwrap_or(60_000);
    let mut options = mcp::timeout(Duration::from_millis(ms));
    options.reset_timeout_on_progress = true;
    let handle = mcp::send_call(server, "ask", arguments, options)
        .await
        .map_err(|e| mcp::failure(&e))?;
    let id = handle.id.clone();
    let outcome = match mcp::result(handle).await {
        Ok(result) => mcp::outcome(&result),
        Err(rmcp::ServiceError::Timeout { .. }) => return Err(SDK_TIMED_OUT.to_owned()),
        Err(e) => Err(mcp::failure(&e)),
    };
    let cancel = CancelledNotificationParam::new(
        Some(id),
        Some("AbortError: The operation was aborted.".to_owned()),
    );
    let _ = server.notify_cancelled(cancel).await;
    outcome
}

fn main() -> ExitCode {
    fake_common::main(Runtime::MultiThread, run_cli)
}

/// The run, to the status it exits with (`Err`: it ended early, having
/// said why on stderr).
async fn run_cli(argv: Vec<String>) -> Result<ExitCode, ExitCode> {
    let args = parse(&argv).or_exit(1)?;
    let config = config().map_err(|e| format!("Error: {e}")).or_exit(1)?;
    // As `run` does, whatever stdin holds is read first.
    let stdin = fake_common::piped_stdin();
    let mut text = message(&args.words);
    if !stdin.is_empty() {
        text = format!("{text}\n{stdin}");
    }
    LOG.line(
        &json!({"argv": argv, "message": text, "env": own_hark_env(|_| false),
        "config": config, "session": args.session, "pid": std::process::id(),
        "process": identity(std::process::id())}),
    );
    let sessions = sessions();
    let session = sessions
        .pick(args.session.as_ref(), default_session)
        .map_err(|_| "Error: Session not found")
        .or_exit(1)?;
    sessions.save(&session, &json!({"id": session}));
    let local = config["mcp"].as_object().into_iter().flatten();
    let servers = mcp::start_each(
        local.filter(|(_, entry)| entry["enabled"] != false && entry["type"] == "local"),
        start,
        |name, e| eprintln!("WARN server unavailable key={name} status=failed: {e}"),
    )
    .await;
    let mut run = Run {
        json: args.json,
        auto: args.auto,
        session,
        permission: config["permission"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        servers,
        parts: 0,
        status: 0,
        ended: false,
    };
    let script = args.words.last().cloned().unwrap_or_default();
    run.follow(&format!("{script}\n{stdin}")).await;
    mcp::stop_each(&mut run.servers).await;
    Ok(ExitCode::from(run.status))
}

/// The session id of a run not resumed: unique on this machine even where
/// every agent is pid 2 of its own PID namespace (confined by hark).
fn default_session() -> String {
    let me = Identity::me();
    format!("ses_fake{}x{}", me.pid, me.start)
}
