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
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

#[path = "../../fake-common/identity.rs"]
mod identity;
use identity::identity;

/// What `run` says of a call the permission `ask` auto-rejected (measured).
const REJECTED: &str = "The user rejected permission to use this specific tool call.";
/// What the model reads of a call cut at `timeout` (measured).
const TIMED_OUT: &str = "MCP error -32001: Request timed out";

#[derive(Debug, Default)]
struct Args {
    json: bool,
    session: Option<String>,
    auto: bool,
    words: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut words = argv.iter();
    let mut run = false;
    while let Some(arg) = words.next() {
        if arg == "--" && run {
            args.words.extend(words.by_ref().cloned());
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| words.next().cloned())
                .ok_or_else(|| format!("Not enough arguments following: {name}"))
        };
        match name {
            "--format" => args.json = value()? == "json",
            "-s" | "--session" => args.session = Some(value()?),
            "-m" | "--model" | "--agent" | "--variant" | "--title" | "--dir" | "--log-level" => {
                value()?;
            }
            "--auto" | "--dangerously-skip-permissions" | "--yolo" => args.auto = true,
            "--print-logs" | "--pure" | "--thinking" => {}
            "run" if !run => run = true,
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("fake-opencode: {flag} is not emulated"));
            }
            word if run => args.words.push(word.to_owned()),
            _ => return Err("fake-opencode: only `opencode run` is emulated".to_owned()),
        }
    }
    if !run {
        return Err("fake-opencode: only `opencode run` is emulated".to_owned());
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

fn log_line(line: &Value) {
    let Some(path) = std::env::var_os("FAKE_OPENCODE_LOG") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

/// The hark variables of an environment, which the log keeps.
fn hark_env<'a>(vars: impl Iterator<Item = (&'a String, &'a String)>) -> BTreeMap<String, String> {
    vars.filter(|(k, _)| k.starts_with("HARK_") || *k == "FAKE_MARKER")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
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

type Server = RunningService<RoleClient, ()>;

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
    log_line(&json!({"server": name, "env": hark_env(env.iter())}));
    process.env_clear().envs(&env);
    let transport = TokioChildProcess::new(process).map_err(|e| e.to_string())?;
    ().serve(transport).await.map_err(|e| e.to_string())
}

/// Where the fake keeps its sessions.
fn session_file(id: &str) -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".local/share")
        });
    data.join("opencode/fake-sessions")
        .join(format!("{id}.json"))
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

    fn text(&mut self, text: &str) {
        if !self.json {
            println!("{text}");
        }
        self.emit("text", json!({"type": "text", "text": text}));
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

    /// `ASK {json}`: the model's call of `operator_ask`.
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
        log_line(&match &outcome {
            Ok(text) => json!({"tool_result": text, "is_error": false}),
            Err(text) => json!({"tool_result": text, "is_error": true}),
        });
        self.tool_use(tool, &input, outcome);
    }

    /// `WRITE path text`: the `write` tool, under the permission `edit`.
    fn write(&mut self, path: &str, text: &str) {
        let input = json!({"filePath": path, "content": text});
        let outcome = self.allowed("write", "edit").and_then(|()| {
            std::fs::write(path, text)
                .map(|()| "Wrote file successfully.".to_owned())
                .map_err(|e| e.to_string())
        });
        self.tool_use("write", &input, outcome);
    }

    async fn follow(&mut self, script: &str) {
        self.emit("step_start", json!({"type": "step-start"}));
        for line in script.lines() {
            if self.ended {
                return;
            }
            let (command, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
            match command {
                "ASK" => match serde_json::from_str::<Value>(rest) {
                    Ok(input) => self.ask(input).await,
                    Err(e) => self.text(&format!("bad ASK: {e}")),
                },
                "SAY" => self.text(rest),
                "WRITE" => {
                    let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
                    self.write(path, text);
                }
                "EXIT" => self.status = rest.trim().parse().unwrap_or(1),
                "HANG" => std::future::pending::<()>().await,
                _ => {}
            }
        }
        self.emit(
            "step_finish",
            json!({"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {"input": 20, "output": 10}}),
        );
    }
}

/// Calls `ask` as OpenCode does: bounded by the server's `timeout`, which
/// each progress notification restarts; then cancels the finished call.
async fn call(server: &Server, entry: &Value, input: &Value) -> Result<String, String> {
    let Value::Object(arguments) = input.clone() else {
        return Err("arguments are not an object".to_owned());
    };
    let ms = entry["timeout"].as_u64().unwrap_or(60_000);
    let params = CallToolRequestParams::new("ask").with_arguments(arguments);
    let mut options = PeerRequestOptions::no_options();
    options.timeout = Some(Duration::from_millis(ms));
    options.reset_timeout_on_progress = true;
    let handle = server
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            options,
        )
        .await
        .map_err(|e| e.to_string())?;
    let id = handle.id.clone();
    let outcome = match handle.await_response().await {
        Ok(ServerResult::CallToolResult(result)) => {
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            match result.is_error {
                Some(true) => Err(text.join("\n")),
                _ => Ok(text.join("\n")),
            }
        }
        Ok(_) => Err("unexpected response".to_owned()),
        Err(rmcp::ServiceError::Timeout { .. }) => return Err(TIMED_OUT.to_owned()),
        Err(e) => Err(e.to_string()),
    };
    let cancel = CancelledNotificationParam::new(
        Some(id),
        Some("AbortError: The operation was aborted.".to_owned()),
    );
    let _ = server.notify_cancelled(cancel).await;
    outcome
}

#[tokio::main]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let config = match config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::from(1);
        }
    };
    // As `run` does, whatever stdin holds is read first.
    let mut stdin = String::new();
    if !std::io::stdin().is_terminal() {
        let _ = std::io::stdin().read_to_string(&mut stdin);
    }
    let mut text = message(&args.words);
    if !stdin.is_empty() {
        text = format!("{text}\n{stdin}");
    }
    log_line(
        &json!({"argv": argv, "message": text, "env": hark_env(std::env::vars().collect::<BTreeMap<_, _>>().iter()),
        "config": config, "session": args.session, "pid": std::process::id(),
        "process": identity(std::process::id())}),
    );
    let session = match &args.session {
        Some(id) if !session_file(id).exists() => {
            eprintln!("Error: Session not found");
            return ExitCode::from(1);
        }
        Some(id) => id.clone(),
        None => default_session(),
    };
    let file = session_file(&session);
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&file, json!({"id": session}).to_string());
    let mut servers = BTreeMap::new();
    for (name, entry) in config["mcp"].as_object().into_iter().flatten() {
        if entry["enabled"] == false || entry["type"] != "local" {
            continue;
        }
        match start(name, entry).await {
            Ok(server) => {
                servers.insert(name.clone(), (server, entry.clone()));
            }
            Err(e) => eprintln!("WARN server unavailable key={name} status=failed: {e}"),
        }
    }
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
    for (_, (server, _)) in std::mem::take(&mut run.servers) {
        let _ = server.cancel().await;
    }
    ExitCode::from(run.status)
}

/// The session id of a run not resumed: unique on this machine even where
/// every agent is pid 2 of its own PID namespace (confined by hark).
fn default_session() -> String {
    let me = identity(std::process::id());
    format!("ses_fake{}x{}", me["pid"], me["start"])
}
