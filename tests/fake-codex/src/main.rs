//! `fake-codex`: behaves like `codex exec` where hark depends on it (what
//! that is, and how each fact was measured on the real CLI, Codex 0.171.0:
//! docs/src/agents/codex.md).
//!
//! - parses `exec [OPTIONS] [--] [PROMPT]` and `exec resume [OPTIONS] [--]
//!   THREAD [PROMPT]`, with `-c`/`--config key=value` (also `-ckey=value`
//!   and `--config=key=value`; the value is TOML, else a literal string; a
//!   later one of a key wins), `--json`, `-s`/`--sandbox MODE`,
//!   `-m`/`--model`, `-C`/`--cd DIR`, `--skip-git-repo-check`,
//!   `--full-auto`, `--dangerously-bypass-approvals-and-sandbox`; any other
//!   flag is refused as clap refuses it (exit status 2);
//! - refuses to run outside a git repository (the directory `-C` names,
//!   else its own) unless given `--skip-git-repo-check`, as Codex does:
//!   "Not inside a trusted directory and --skip-git-repo-check was not
//!   specified." on stderr, nothing on stdout, exit status 1;
//! - reads its stdin to the end before it starts, as `codex exec` does (so a
//!   stdin left open hangs it);
//! - starts the MCP servers the overrides name (`mcp_servers.NAME.command`,
//!   `args`): each gets only a filtered environment, `HOME`, `PATH`,
//!   `LANG`, `LC_ALL`, `SHELL`, `TERM`, `USER`, `LOGNAME`, `TMPDIR` and the
//!   CA variables, plus the names in `env_vars` and the table `env`, as
//!   Codex does; a server with `required = true` that cannot start ends the
//!   run (exit status 1);
//! - follows a script in its prompt, one command a line: `ASK {json}` calls
//!   `ask` on the server `operator` (the model's `mcp__operator` namespace):
//!   without `default_tools_approval_mode = "approve"` (or
//!   `tools.ask.approval_mode`) the call fails "MCP tool call requires
//!   approval, but approval policy is never", and it is cut at
//!   `tool_timeout_sec` (300 s when unset) whatever progress it reports,
//!   with `notifications/cancelled`; `SAY text` is an agent message;
//!   `WRITE path text` writes a file with a shell command, which the
//!   `read-only` sandbox refuses; `EXIT n` sets the exit status; `HANG`
//!   waits until killed;
//! - prints, with `--json`, the events `thread.started {thread_id}`,
//!   `turn.started`, `item.started`/`item.completed` (`mcp_tool_call`,
//!   `command_execution`, `agent_message`, `error`) and `turn.completed
//!   {usage}`; without it, the agent's messages as text;
//! - threads: each is saved to `$CODEX_HOME/fake-threads/<id>.json`
//!   (`$HOME/.codex` without `CODEX_HOME`); `exec resume ID PROMPT` goes on
//!   in it (its `thread.started` names the same id); an unknown id fails;
//! - when `FAKE_CODEX_LOG` names a file, appends its argv, the hark
//!   environment it received and the overrides, one JSON line per run, and
//!   the environment each MCP server was given, one line per server.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use fake_common::identity::{Identity, identity};
use fake_common::log::{Log, cwd, own_hark_env};
use fake_common::mcp::{self, Server};
use fake_common::script::{self, Agent};
use fake_common::session::{Sessions, env_dir};
use fake_common::{OrExit, Runtime};
use serde_json::{Value, json};

/// Where the log goes when the tests ask for one.
const LOG: Log = Log::new("FAKE_CODEX_LOG");

/// What Codex passes an MCP server of its own environment (measured).
const SERVER_ENV: &[&str] = &[
    "HOME",
    "PATH",
    "LANG",
    "LC_ALL",
    "SHELL",
    "TERM",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The error of a call Codex will not make under approval `never` (measured).
const NEEDS_APPROVAL: &str = "MCP tool call requires approval, but approval policy is never";

#[derive(Debug, Default)]
struct Args {
    json: bool,
    config: toml::Table,
    sandbox: Option<String>,
    /// `-C DIR`: where it works, and whose repository it checks.
    cd: Option<String>,
    skip_git_repo_check: bool,
    resume: Option<String>,
    prompt: Option<String>,
}

/// A value as `-c` reads it: TOML, else the raw text as a string.
fn config_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}

/// Sets `a.b.c = value` in `table`.
fn set_dotted(table: &mut toml::Table, key: &str, value: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut at = table;
    for part in parts {
        let entry = at
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        at = entry.as_table_mut().expect("made a table");
    }
    at.insert(last.to_owned(), value);
}

/// The value of flag `flag` in `arg` (`Some(None)`: it is the next word).
fn flag_value<'a>(arg: &'a str, flag: &str) -> Option<Option<&'a str>> {
    if arg == flag {
        return Some(None);
    }
    let rest = arg.strip_prefix(flag)?;
    match rest.strip_prefix('=') {
        Some(value) => Some(Some(value)),
        None if flag.len() == 2 => Some(Some(rest)),
        None => None,
    }
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut words = argv.iter().map(String::as_str);
    let mut positionals = Vec::new();
    let mut exec = false;
    while let Some(arg) = words.next() {
        if arg == "--" {
            positionals.extend(words.by_ref().map(str::to_owned));
            break;
        }
        let mut value_of = |flags: &[&str]| -> Option<Result<String, String>> {
            let inline = flags.iter().find_map(|f| flag_value(arg, f))?;
            Some(match inline {
                Some(value) => Ok(value.to_owned()),
                None => words
                    .next()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("error: a value is required for '{arg}'")),
            })
        };
        if let Some(value) = value_of(&["-c", "--config"]) {
            let value = value?;
            let (key, raw) = value
                .split_once('=')
                .ok_or_else(|| format!("Invalid override (missing '='): {value}"))?;
            set_dotted(&mut args.config, key.trim(), config_value(raw.trim()));
        } else if let Some(value) = value_of(&["-s", "--sandbox"]) {
            let value = value?;
            if !["read-only", "workspace-write", "danger-full-access"].contains(&value.as_str()) {
                return Err(format!(
                    "error: invalid value '{value}' for '--sandbox <SANDBOX_MODE>'"
                ));
            }
            args.sandbox = Some(value);
        } else if let Some(value) = value_of(&["-C", "--cd"]) {
            args.cd = Some(value?);
        } else if let Some(value) = value_of(&["-m", "--model"]) {
            value?;
        } else if arg == "--json" {
            args.json = true;
        } else if arg == "--skip-git-repo-check" {
            args.skip_git_repo_check = true;
        } else if ["--full-auto", "--dangerously-bypass-approvals-and-sandbox"].contains(&arg) {
        } else if arg.starts_with('-') && arg.len() > 1 {
            return Err(format!("error: unexpected argument '{arg}' found"));
        } else if !exec && (arg == "exec" || arg == "e") {
            exec = true;
        } else if exec && positionals.is_empty() && args.resume.is_none() && arg == "resume" {
            args.resume = Some(String::new());
        } else {
            positionals.push(arg.to_owned());
        }
    }
    if !exec {
        return Err("fake-codex: only `codex exec` is emulated".to_owned());
    }
    let mut positionals = positionals.into_iter();
    if args.resume.is_some() {
        args.resume = Some(
            positionals
                .next()
                .ok_or("error: resume needs a SESSION_ID (--last is not emulated)")?,
        );
    }
    args.prompt = positionals.next();
    Ok(args)
}

fn emit(json: bool, event: Value) {
    if json {
        println!("{event}");
    }
}

/// One MCP server the overrides name, started.
struct Mcp {
    client: Server,
    settings: toml::Table,
}

/// Starts `name` as Codex does, with its filtered environment.
async fn start(name: &str, settings: &toml::Table) -> Result<Server, String> {
    let command = settings
        .get("command")
        .and_then(toml::Value::as_str)
        .ok_or("no command")?;
    let mut process = tokio::process::Command::new(command);
    for arg in settings
        .get("args")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
    {
        process.arg(arg.as_str().unwrap_or_default());
    }
    process.env_clear();
    let named = settings
        .get("env_vars")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str);
    let mut given = BTreeMap::new();
    for var in SERVER_ENV.iter().copied().chain(named) {
        if let Ok(value) = std::env::var(var) {
            given.insert(var.to_owned(), value);
        }
    }
    for (key, value) in settings
        .get("env")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
    {
        given.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
    }
    process.envs(&given);
    LOG.line(&json!({"server": name, "env": given}));
    mcp::start(process).await.map_err(|e| e.to_string())
}

/// Starts every server; a required one that fails is the run's end.
async fn connect(config: &toml::Table, json: bool) -> Result<BTreeMap<String, Mcp>, String> {
    let mut servers = BTreeMap::new();
    let named = config.get("mcp_servers").and_then(toml::Value::as_table);
    for (name, settings) in named.into_iter().flatten() {
        let Some(settings) = settings.as_table() else {
            continue;
        };
        match start(name, settings).await {
            Ok(client) => {
                servers.insert(
                    name.clone(),
                    Mcp {
                        client,
                        settings: settings.clone(),
                    },
                );
            }
            Err(e) if settings.get("required").and_then(toml::Value::as_bool) == Some(true) => {
                return Err(format!(
                    "Error: required MCP servers failed to initialize: {name}: {e}"
                ));
            }
            Err(e) => emit(
                json,
                json!({"type": "item.completed", "item": {"type": "error",
                    "message": format!("MCP client for `{name}` failed to start: {e}")}}),
            ),
        }
    }
    Ok(servers)
}

/// Where the fake keeps its threads.
fn threads() -> Sessions {
    Sessions::new(env_dir("CODEX_HOME", ".codex").join("fake-threads"))
}

struct Run {
    json: bool,
    sandbox: Option<String>,
    servers: BTreeMap<String, Mcp>,
    items: u64,
    status: u8,
}

impl Run {
    fn item_id(&mut self) -> String {
        self.items += 1;
        format!("item_{}", self.items)
    }
}

impl Agent for Run {
    /// The model's call of `mcp__operator` `ask`.
    async fn ask(&mut self, arguments: Value) {
        let id = self.item_id();
        let item = |status: &str, result: Value, error: Value| {
            json!({"id": id, "type": "mcp_tool_call", "server": "operator", "tool": "ask",
                "arguments": arguments, "result": result, "error": error, "status": status})
        };
        emit(
            self.json,
            json!({"type": "item.started", "item": item("in_progress", Value::Null, Value::Null)}),
        );
        let outcome = match self.servers.get("operator") {
            None => Err("unknown MCP server 'operator'".to_owned()),
            Some(mcp) => call_ask(mcp, &arguments).await,
        };
        if let Ok(text) = &outcome {
            LOG.line(&json!({"tool_result": text}));
        }
        let done = match outcome {
            Ok(text) => item(
                "completed",
                json!({"content": [{"type": "text", "text": text}], "structured_content": null}),
                Value::Null,
            ),
            Err(message) => item("failed", Value::Null, json!({"message": message})),
        };
        emit(self.json, json!({"type": "item.completed", "item": done}));
    }

    /// An agent message.
    fn say(&mut self, text: &str) {
        let id = self.item_id();
        if self.json {
            emit(
                true,
                json!({"type": "item.completed", "item": {"id": id, "type": "agent_message", "text": text}}),
            );
        } else {
            println!("{text}");
        }
    }

    /// A shell command writing a file, refused by the read-only sandbox.
    fn write(&mut self, path: &str, text: &str) {
        let id = self.item_id();
        let command = format!("/bin/sh -lc 'printf %s … > {path}'");
        emit(
            self.json,
            json!({"type": "item.started", "item": {"id": id, "type": "command_execution",
            "command": command, "aggregated_output": "", "exit_code": null, "status": "in_progress"}}),
        );
        let (output, code) = if self.sandbox.as_deref() == Some("read-only") {
            (
                format!("/bin/sh: 1: cannot create {path}: Read-only file system\n"),
                2,
            )
        } else {
            match std::fs::write(path, text) {
                Ok(()) => (String::new(), 0),
                Err(e) => (format!("{e}\n"), 1),
            }
        };
        let status = if code == 0 { "completed" } else { "failed" };
        emit(
            self.json,
            json!({"type": "item.completed", "item": {"id": id, "type": "command_execution",
            "command": command, "aggregated_output": output, "exit_code": code, "status": status}}),
        );
    }

    fn exit(&mut self, status: u8) {
        self.status = status;
    }

    /// What the model says of a line that is no command: the line.
    fn other(&mut self, line: &str) {
        self.say(line);
    }
}

/// Calls `ask` as Codex does: only when its approval mode lets it, cut at
/// `tool_timeout_sec`.
async fn call_ask(server: &Mcp, arguments: &Value) -> Result<String, String> {
    let approve = |t: &toml::Table| {
        t.get("default_tools_approval_mode")
            .and_then(toml::Value::as_str)
            == Some("approve")
    };
    let per_tool = server
        .settings
        .get("tools")
        .and_then(|t| t.get("ask"))
        .and_then(|t| t.get("approval_mode"))
        .and_then(toml::Value::as_str);
    if !approve(&server.settings) && per_tool != Some("approve") {
        return Err(NEEDS_APPROVAL.to_owned());
    }
    let secs = server
        .settings
        .get("tool_timeout_sec")
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .unwrap_or(300.0);
    let arguments = mcp::arguments(arguments).map_err(|e| e.to_string())?;
    let options = mcp::timeout(Duration::from_secs_f64(secs));
    match mcp::call(&server.client, "ask", arguments, options).await {
        Ok(result) => Ok(mcp::text(&result)),
        Err(rmcp::ServiceError::Timeout { timeout }) => {
            Err(format!("tool call timed out after {}s", timeout.as_secs()))
        }
        Err(e) => Err(mcp::failure(&e)),
    }
}

fn main() -> ExitCode {
    fake_common::main(Runtime::MultiThread, run_cli)
}

/// The run, to the status it exits with (`Err`: it ended early, having
/// said why on stderr).
async fn run_cli(argv: Vec<String>) -> Result<ExitCode, ExitCode> {
    let args = parse(&argv).or_exit(2)?;
    LOG.line(
        &json!({"argv": argv, "env": own_hark_env(|_| false), "cwd": cwd(), "pid": std::process::id(),
        "process": identity(std::process::id()), "thread": default_thread(),
        "config": args.config, "sandbox": args.sandbox, "resume": args.resume}),
    );
    // As `codex exec` does, whatever stdin holds is read first.
    eprintln!("Reading additional input from stdin...");
    let mut stdin = String::new();
    let _ = std::io::stdin().read_to_string(&mut stdin);
    if !args.skip_git_repo_check && !in_git_repository(args.cd.as_deref()) {
        eprintln!("{UNTRUSTED}");
        return Err(ExitCode::from(1));
    }
    let threads = threads();
    let thread = threads
        .pick(args.resume.as_ref(), default_thread)
        .map_err(|u| format!("Error: no saved thread {}", u.id))
        .or_exit(1)?;
    threads.save(&thread, &json!({"thread_id": thread}));
    emit(
        args.json,
        json!({"type": "thread.started", "thread_id": thread}),
    );
    let servers = connect(&args.config, args.json).await.or_exit(1)?;
    emit(args.json, json!({"type": "turn.started"}));
    let mut run = Run {
        json: args.json,
        sandbox: args.sandbox.clone(),
        servers,
        items: 0,
        status: 0,
    };
    script::follow(&mut run, args.prompt.as_deref().unwrap_or(stdin.as_str())).await;
    emit(
        args.json,
        json!({"type": "turn.completed", "usage": {"input_tokens": 20, "cached_input_tokens": 0,
        "output_tokens": 10, "reasoning_output_tokens": 0}}),
    );
    mcp::stop(
        std::mem::take(&mut run.servers)
            .into_values()
            .map(|m| m.client),
    )
    .await;
    Ok(ExitCode::from(run.status))
}

/// What Codex says outside a git repository without
/// `--skip-git-repo-check`, before any event, and exits 1 (as seen with
/// the real CLI in issue 28; not yet in docs/src/agents/codex.md).
const UNTRUSTED: &str =
    "Not inside a trusted directory and --skip-git-repo-check was not specified.";

/// Whether `cd` (else the working directory) is inside a git repository:
/// it or a directory above it has a `.git`.
fn in_git_repository(cd: Option<&str>) -> bool {
    let Ok(here) = std::env::current_dir() else {
        return false;
    };
    let dir = match cd {
        Some(cd) => here.join(cd),
        None => here,
    };
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// The thread id of a run not resumed: unique on this machine even where
/// every agent is pid 2 of its own PID namespace (confined by hark).
fn default_thread() -> String {
    let me = Identity::me();
    format!("fake-thread-{}-{}", me.pid, me.start)
}
