//! `fake-gemini`: behaves like `gemini -p` where hark depends on it (what
//! that is, and how each fact was measured on the real CLI, Gemini CLI
//! 0.61.0: docs/src/agents/gemini.md).
//!
//! - parses `-p`/`--prompt PROMPT` (or `--prompt=PROMPT`),
//!   `--output-format text|json|stream-json`, `-r`/`--resume ID`,
//!   `-m`/`--model`, `--approval-mode MODE`, `-y`/`--yolo`,
//!   `--skip-trust`; any other flag is refused (exit status 1), and so is
//!   a command line without `-p`;
//! - a folder not trusted: exits 55 unless `--skip-trust` or
//!   `GEMINI_CLI_TRUST_WORKSPACE=true` (the fake trusts no folder);
//! - whatever stdin holds is read to its end and put before the prompt;
//! - its settings are `$GEMINI_CLI_HOME/.gemini/settings.json` (`$HOME`
//!   without it); each server of `mcpServers` (`command`, `args`, `env`,
//!   `timeout` in ms, 600 000 unset, `trust`) is started as a real MCP
//!   client, with the environment less every variable whose name holds
//!   `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `AUTH`, `CREDENTIAL`,
//!   `CREDS`, `PRIVATE` or `CERT` (only an allow-list under `GITHUB_SHA`),
//!   plus its `env`;
//! - a server's tool is the model's `mcp_NAME_TOOL`, offered only when the
//!   server has `trust: true` (or under `--yolo`); `run_shell_command` and
//!   `write_file` only under `--yolo` or `--approval-mode yolo`. A tool not
//!   offered comes back as `Tool "…" not found`, and the run goes on;
//! - a call is cut at the server's `timeout`, which progress does not
//!   extend (`MCP error -32001: Request timed out`);
//! - follows a script, every line of the prompt: `ASK {json}` calls
//!   `mcp_operator_ask`; `SAY text` is the model's text; `WRITE path text`
//!   calls `write_file`; `EXIT n` sets the exit status; `HANG` waits until
//!   killed;
//! - prints, with `stream-json`, `init`, `message` (the user's, then the
//!   assistant's in `delta` pieces), `tool_use`, `tool_result` and
//!   `result`; otherwise the text alone;
//! - sessions: saved to `<home>/.gemini/tmp/fake-sessions/<id>.json`;
//!   `--resume ID` goes on in one, and an unknown id exits 42;
//! - when `FAKE_GEMINI_LOG` names a file, appends its argv, the prompt,
//!   the hark environment and the settings it read, one JSON line per run,
//!   each server's hark environment, and each tool result.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fake_common::identity::{Identity, identity};
use fake_common::log::{Log, hark_env};
use fake_common::mcp::{self, SDK_TIMED_OUT, Server};
use fake_common::script::{self, Agent};
use fake_common::session::Sessions;
use fake_common::words::{MissingValue, Words};
use fake_common::{OrExit, Runtime};
use serde_json::{Value, json};

/// Where the log goes when the tests ask for one.
const LOG: Log = Log::new("FAKE_GEMINI_LOG");

/// Words whose presence in a variable's name keeps it from a server (measured).
const REDACTED: [&str; 10] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "CERT",
];
/// What passes under `GITHUB_SHA` (part of the CLI's allow-list).
const ALLOWED: [&str; 8] = [
    "PATH", "HOME", "LANG", "SHELL", "TERM", "USER", "TMPDIR", "LOGNAME",
];

/// What is wrong with the command line.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error(transparent)]
    MissingValue(#[from] MissingValue),
    #[error("fake-gemini: {0} is not emulated")]
    Flag(String),
    #[error("fake-gemini: only `gemini -p` is emulated")]
    NoPrompt,
}

#[derive(Debug, Default)]
struct Args {
    prompt: Option<String>,
    format: String,
    resume: Option<String>,
    yolo: bool,
    skip_trust: bool,
}

fn parse(argv: &[String]) -> Result<Args, ArgsError> {
    let mut args = Args {
        format: "text".to_owned(),
        ..Args::default()
    };
    let mut words = Words::new(argv);
    while let Some(word) = words.next() {
        match word.name {
            "-p" | "--prompt" => args.prompt = Some(words.value(&word)?),
            "-o" | "--output-format" => args.format = words.value(&word)?,
            "-r" | "--resume" => args.resume = Some(words.value(&word)?),
            "-m" | "--model" => {
                words.value(&word)?;
            }
            "--approval-mode" => args.yolo |= words.value(&word)? == "yolo",
            "-y" | "--yolo" => args.yolo = true,
            "--skip-trust" => args.skip_trust = true,
            other => return Err(ArgsError::Flag(other.to_owned())),
        }
    }
    if args.prompt.is_none() {
        return Err(ArgsError::NoPrompt);
    }
    Ok(args)
}

/// The variables of an environment that the log keeps: hark's, and any
/// whose name holds `KEY` (to show which reach a server).
fn logged_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    hark_env(env, |k| k.contains("KEY"))
}

/// Where the CLI reads `.gemini/` from.
fn home() -> PathBuf {
    std::env::var_os("GEMINI_CLI_HOME")
        .or_else(|| std::env::var_os("HOME"))
        .map(PathBuf::from)
        .unwrap_or_default()
}

fn settings() -> Result<Value, String> {
    let path = home().join(".gemini/settings.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(_) => Ok(json!({})),
    }
}

/// Starts one `mcpServers.NAME`, with the environment the CLI passes.
async fn start(name: &str, entry: &Value) -> Result<Server, String> {
    let program = entry["command"].as_str().ok_or("no command")?;
    let mut process = tokio::process::Command::new(program);
    process.args(
        entry["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    let ci = std::env::var_os("GITHUB_SHA").is_some();
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| match ci {
            true => ALLOWED.contains(&k.as_str()),
            false => !REDACTED.iter().any(|word| k.to_uppercase().contains(word)),
        })
        .collect();
    for (key, value) in entry["env"].as_object().into_iter().flatten() {
        env.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
    }
    LOG.line(&json!({"server": name, "env": logged_env(&env)}));
    process.env_clear().envs(&env);
    if let Some(cwd) = entry["cwd"].as_str() {
        process.current_dir(cwd);
    }
    mcp::start(process).await.map_err(|e| e.to_string())
}

struct Run {
    stream: bool,
    yolo: bool,
    session: String,
    servers: BTreeMap<String, (Server, Value)>,
    calls: u64,
    status: u8,
    /// The text printed with `--output-format text|json`.
    text: String,
}

impl Run {
    fn emit(&self, event: Value) {
        if self.stream {
            println!("{event}");
        }
    }

    /// A tool call and its result.
    fn tool(&mut self, name: &str, id: &str, input: &Value, outcome: &Result<String, String>) {
        self.emit(
            json!({"type": "tool_use", "tool_name": name, "tool_id": id, "parameters": input}),
        );
        self.emit(match outcome {
            Ok(output) => {
                json!({"type": "tool_result", "tool_id": id, "status": "success", "output": output})
            }
            Err(error) => json!({"type": "tool_result", "tool_id": id, "status": "error",
                "error": {"type": "tool_error", "message": error}}),
        });
        LOG.tool_result(outcome);
    }
}

impl Agent for Run {
    /// The model's call of `mcp_operator_ask`.
    async fn ask(&mut self, input: Value) {
        let tool = "mcp_operator_ask";
        self.calls += 1;
        let id = format!("{tool}__call{}", self.calls);
        let offered = self
            .servers
            .get("operator")
            .filter(|(_, entry)| entry["trust"] == true || self.yolo);
        let outcome = match offered {
            None => Err(format!("Tool \"{tool}\" not found.")),
            Some((server, entry)) => call(server, entry, &input).await,
        };
        self.tool(tool, &id, &input, &outcome);
    }

    fn say(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push('\n');
        let (first, rest) = text.split_at(text.len() / 2);
        for piece in [first, rest] {
            self.emit(
                json!({"type": "message", "role": "assistant", "content": piece, "delta": true}),
            );
        }
    }

    /// `write_file`, offered only under `--yolo`.
    fn write(&mut self, path: &str, text: &str) {
        self.calls += 1;
        let id = format!("write_file__call{}", self.calls);
        let input = json!({"file_path": path, "content": text});
        let outcome = match self.yolo {
            false => Err("Tool \"write_file\" not found.".to_owned()),
            true => std::fs::write(path, text)
                .map(|()| "Wrote the file.".to_owned())
                .map_err(|e| e.to_string()),
        };
        self.tool("write_file", &id, &input, &outcome);
    }

    fn exit(&mut self, status: u8) {
        self.status = status;
    }
}

/// Calls `ask` as the CLI does: cut at the server's `timeout`, which
/// progress does not extend.
async fn call(server: &Server, entry: &Value, input: &Value) -> Result<String, String> {
    let arguments = mcp::arguments(input).map_err(|e| e.to_string())?;
    let ms = entry["timeout"].as_u64().unwrap_or(600_000);
    match mcp::call(
        server,
        "ask",
        arguments,
        mcp::timeout(Duration::from_millis(ms)),
    )
    .await
    {
        Ok(result) => mcp::outcome(&result),
        Err(rmcp::ServiceError::Timeout { .. }) => Err(SDK_TIMED_OUT.to_owned()),
        Err(e) => Err(mcp::failure(&e)),
    }
}

/// Where the fake keeps its sessions.
fn sessions() -> Sessions {
    Sessions::new(home().join(".gemini/tmp/fake-sessions"))
}

fn main() -> ExitCode {
    fake_common::main(Runtime::MultiThread, run_cli)
}

/// The run, to the status it exits with (`Err`: it ended early, having
/// said why on stderr).
async fn run_cli(argv: Vec<String>) -> Result<ExitCode, ExitCode> {
    let args = parse(&argv).or_exit(1)?;
    if !args.skip_trust && std::env::var("GEMINI_CLI_TRUST_WORKSPACE").as_deref() != Ok("true") {
        eprintln!(
            "Gemini CLI is not running in a trusted directory. To proceed, either use --skip-trust, set the GEMINI_CLI_TRUST_WORKSPACE=true environment variable, or trust this directory in interactive mode."
        );
        return Err(ExitCode::from(55));
    }
    let settings = settings()
        .map_err(|e| format!("Error in settings: {e}"))
        .or_exit(52)?;
    let stdin = fake_common::piped_stdin();
    let mut prompt = args.prompt.clone().unwrap_or_default();
    if !stdin.is_empty() {
        prompt = format!("{stdin}\n\n{prompt}");
    }
    let env: BTreeMap<String, String> = std::env::vars().collect();
    LOG.line(
        &json!({"argv": argv, "prompt": prompt, "env": logged_env(&env),
        "settings": settings, "home": home(), "session": args.resume,
        "process": identity(std::process::id())}),
    );
    let sessions = sessions();
    let fresh = || {
        let me = Identity::me();
        format!("fake-{}-{}", me.pid, me.start)
    };
    let session = sessions
        .pick(args.resume.as_ref(), fresh)
        .map_err(|u| {
            format!(
                "Error resuming session: Invalid session identifier \"{}\".",
                u.id
            )
        })
        .or_exit(42)?;
    sessions.save(&session, &json!({"sessionId": session}));
    let servers = mcp::start_each(
        settings["mcpServers"].as_object().into_iter().flatten(),
        start,
        |name, e| eprintln!("Error connecting to MCP server '{name}': {e}"),
    )
    .await;
    let mut run = Run {
        stream: args.format == "stream-json",
        yolo: args.yolo,
        session,
        servers,
        calls: 0,
        status: 0,
        text: String::new(),
    };
    run.emit(json!({"type": "init", "timestamp": "", "session_id": run.session, "model": "auto"}));
    run.emit(json!({"type": "message", "role": "user", "content": prompt}));
    script::follow(&mut run, &prompt).await;
    run.emit(
        json!({"type": "result", "status": "success", "stats": {"total_tokens": 30,
        "input_tokens": 20, "output_tokens": 10, "duration_ms": 1200, "tool_calls": run.calls}}),
    );
    match args.format.as_str() {
        "json" => println!(
            "{}",
            json!({"session_id": run.session, "response": run.text.trim_end()})
        ),
        "text" => print!("{}", run.text),
        _ => {}
    }
    mcp::stop_each(&mut run.servers).await;
    Ok(ExitCode::from(run.status))
}
