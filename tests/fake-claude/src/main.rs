//! `fake-claude`: behaves like `claude -p` where hark depends on it (what
//! that is, and how each fact was measured on the real CLI:
//! docs/src/agents/claude-code.md).
//!
//! - parses `-p PROMPT`, `--output-format`, `--verbose`, `--allowedTools`,
//!   `--disallowedTools`, `--mcp-config`, `--append-system-prompt`,
//!   `--resume`, `--permission-prompt-tool`, `--settings`, as the real CLI
//!   takes them;
//! - refuses `--output-format stream-json` without `--verbose`, as it does;
//! - denies an MCP tool not named in `--allowedTools` (in `-p` mode);
//! - spawns the MCP servers named in `--mcp-config`, initializes them and
//!   lists their tools; every `tools/call` carries `_meta`
//!   `{"claudecode/toolUseId": <the tool use's id>, "progressToken": N}`
//!   (rmcp adds its own protocol keys beside them);
//! - follows a script in its prompt, one command a line:
//!   `ASK {json}` calls `mcp__operator__ask`; `NESTED {json}` runs a child of
//!   itself (a sub-agent inheriting the MCP config and settings, in a
//!   session of its own) that asks; `SAY text`;
//!   `HANG` waits until killed; `EXIT n` sets the exit status;
//!   `SHELL command` runs `sh -c command` (Windows: `cmd /C command`) as an
//!   allowed Bash tool call
//!   (its output is the tool result);
//!   `BACKGROUND` starts a long `sleep` (Windows: itself, as
//!   `--fake-sleep 600 LOG`) that outlives the agent unless its
//!   process group is ended (as a tool's background shell would), and logs
//!   its pid as `{"background_pid": N}`;
//!   `TOOL name {input}` uses a tool as the model would: read tools and
//!   tools in `--allowedTools` run; anything else goes to the
//!   `--permission-prompt-tool` (`{"tool_name","input","tool_use_id"}`) and
//!   runs only on `{"behavior":"allow"}`, else is denied; `Write` and `Edit`
//!   really change the file;
//!   `BOTH CALL && CALL …` (each CALL an `ASK …` or `TOOL …`) is one message
//!   with several tool calls: every tool use is printed, then each is
//!   carried out in turn; if hooks defer one (at most one is kept), the
//!   others still run and the run stops after them;
//!   every tool use gets a fresh id, `toolu_fake<pid>_<start>_<n>`;
//! - `PreToolUse` hooks (`--settings FILE_OR_JSON`, `{"hooks":{"PreToolUse":
//!   [{"matcher","hooks":[{"type":"command","command","timeout"}]}]}}`): a
//!   matcher is a tool name or `A|B` alternatives (`""`/`*`/none: every
//!   tool; the real CLI also takes regexes, the fake does not). Before a
//!   tool use each matching hook runs as `sh -c COMMAND` with the hook input
//!   on stdin (`session_id`, `transcript_path` = the session file below,
//!   `cwd`, `permission_mode` "default", `hook_event_name` "PreToolUse",
//!   `tool_name`, `tool_input`, `tool_use_id`, `mcp_server {name}` for MCP
//!   tools) and its `hookSpecificOutput.permissionDecision` counts:
//!   `allow` runs the tool with no permission check; `deny` gives the model
//!   the tool error `PreToolUse:TOOL hook error: REASON`; `ask` goes to the
//!   `--permission-prompt-tool`, or without one is refused with the reason;
//!   `defer` ends the run: the final `result` event has `"stop_reason"` and
//!   `"terminal_reason"` `"tool_deferred"` and `"deferred_tool_use"
//!   {id,name,input}`, the session is saved, the exit status is 0. Exit
//!   status 2 is a deny whose reason is `[COMMAND]: STDERR`; no output, any
//!   other status, or a hook killed at its `timeout` (seconds, 600 if none;
//!   the `system`/`informational` `hook_no_verdict` warning is printed) is
//!   the normal flow. Of several matching hooks the strictest decision wins
//!   (deny, defer, ask, allow);
//! - sessions: each is saved (`{"session_id","script","next","deferred",
//!   "uses"}`) to `$HOME/.claude/projects/fake/<session_id>.json`, mode
//!   0600. `--resume ID -p PROMPT` starts a new script in session ID;
//!   `--resume ID` with no prompt carries out the deferred tool use first
//!   (its hooks fire again with the same `tool_use_id`, before
//!   `system/init`, as the real CLI does), then goes on with the rest of the
//!   saved script. A session with no file fails as the real CLI does:
//!   `No conversation found with session ID: ID` on stderr, a `result`
//!   event `error_during_execution`, exit status 1;
//! - prints stream-json events (system/init, assistant, user, result);
//! - when `FAKE_CLAUDE_LOG` names a file, appends its argv and the hark
//!   environment it received, one JSON line per run.

mod hooks;
#[path = "../../fake-common/identity.rs"]
mod identity;
mod saved;

use std::collections::BTreeMap;
use std::error::Error;
use std::io::Write;
use std::process::ExitCode;

use hooks::{Decision, Outcome, PreToolUse};
use identity::identity;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, Request, RequestMetaObject, ServerResult,
};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use saved::{Saved, ToolUse};
use serde_json::{Value, json};

/// What is wrong with the command line, worded as the real CLI words it.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("error: option '{0}' argument missing")]
    MissingValue(String),
    #[error("error: unknown option '{0}'")]
    Unknown(String),
}

/// Why the servers in `--mcp-config` could not be used.
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("cannot read {config}")]
    Read {
        config: String,
        #[source]
        source: std::io::Error,
    },
    #[error("bad MCP config {config}")]
    BadConfig {
        config: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot start {name}")]
    Start {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot initialize {name}")]
    Initialize {
        name: String,
        #[source]
        source: Box<ClientInitializeError>,
    },
}

/// Why a tool use did not happen: the tool result the model is given says
/// it (the permission refusals as Claude Code words them).
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("Claude requested permissions to use {name}, but you haven't granted it yet.")]
    NotGranted { name: String },
    #[error("bad --permission-prompt-tool {tool}")]
    BadPromptTool { tool: String },
    #[error("no MCP server {server} for the permission prompt")]
    NoPromptServer { server: String },
    #[error("permission prompt failed")]
    PromptFailed(#[source] ServiceError),
    #[error("permission prompt returned no verdict: {text}")]
    NoVerdict { text: String },
    /// The prompt tool said no; its message.
    #[error("{message}")]
    Denied { message: String },
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("old_string not found in {path}")]
    OldStringNotFound { path: String },
}

/// An error and its causes on one line, `what: why: why`.
fn message(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[derive(Debug, Default)]
struct Args {
    prompt: Option<String>,
    output_format: Option<String>,
    verbose: bool,
    allowed: Vec<String>,
    disallowed: Vec<String>,
    mcp_configs: Vec<String>,
    resume: Option<String>,
    permission_prompt_tool: Option<String>,
    settings: Vec<String>,
}

fn tools(value: &str) -> Vec<String> {
    value
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

fn parse(argv: &[String]) -> Result<Args, ArgsError> {
    let mut args = Args::default();
    let mut i = 0;
    let value = |i: &mut usize| -> Result<String, ArgsError> {
        *i += 1;
        argv.get(*i)
            .cloned()
            .ok_or_else(|| ArgsError::MissingValue(argv[*i - 1].clone()))
    };
    while i < argv.len() {
        let arg = argv[i].as_str();
        match arg {
            "-p" | "--print" => {}
            "--verbose" => args.verbose = true,
            "--output-format" => args.output_format = Some(value(&mut i)?),
            "--settings" => args.settings.push(value(&mut i)?),
            "--append-system-prompt" | "--model" => {
                value(&mut i)?;
            }
            "--permission-prompt-tool" => args.permission_prompt_tool = Some(value(&mut i)?),
            "--resume" | "-r" => args.resume = Some(value(&mut i)?),
            "--allowedTools" | "--allowed-tools" | "--disallowedTools" | "--disallowed-tools"
            | "--mcp-config" => {
                let mut values = Vec::new();
                while i + 1 < argv.len() && !argv[i + 1].starts_with('-') {
                    i += 1;
                    values.push(argv[i].clone());
                }
                if values.is_empty() {
                    return Err(ArgsError::MissingValue(arg.to_owned()));
                }
                match arg {
                    "--allowedTools" | "--allowed-tools" => {
                        args.allowed.extend(values.iter().flat_map(|v| tools(v)))
                    }
                    "--disallowedTools" | "--disallowed-tools" => {
                        args.disallowed.extend(values.iter().flat_map(|v| tools(v)))
                    }
                    _ => args.mcp_configs.extend(values),
                }
            }
            other if other.starts_with('-') => {
                return Err(ArgsError::Unknown(other.to_owned()));
            }
            prompt => args.prompt = Some(prompt.to_owned()),
        }
        i += 1;
    }
    Ok(args)
}

fn emit(event: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

/// Starts `sleep 600` with nothing of ours open, and logs its pid. Windows
/// has no `sleep`: this program stands in, told by [`SLEEP_MARK`].
fn background() {
    #[cfg(unix)]
    let mut command = std::process::Command::new("sleep");
    #[cfg(unix)]
    command.arg("600");
    // Its command line names this run's log, so a test finds it among
    // Wine's processes.
    #[cfg(windows)]
    let mut command = std::process::Command::new(
        std::env::current_exe().unwrap_or_else(|_| "fake-claude".into()),
    );
    #[cfg(windows)]
    command
        .args([SLEEP_MARK, "600"])
        .arg(std::env::var_os("FAKE_CLAUDE_LOG").unwrap_or_default());
    let spawned = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(child) = spawned {
        log_line(&json!({"background_pid": child.id(), "background": identity(child.id())}));
    }
}

/// `fake-claude --fake-sleep SECONDS [MARK]` only sleeps (Windows's `sleep`).
#[cfg(windows)]
const SLEEP_MARK: &str = "--fake-sleep";

/// `fake-claude --fake-breakaway PROGRAM ARGS…` starts PROGRAM out of its
/// job object (`CREATE_BREAKAWAY_FROM_JOB`), as a tool leaving the agent's
/// job would, and says how that went on its first line: `broke away`, or
/// `breakaway refused: ERROR` (exit status 1).
#[cfg(windows)]
const BREAKAWAY_MARK: &str = "--fake-breakaway";

#[cfg(windows)]
fn break_away(argv: &[String]) -> ExitCode {
    use std::os::windows::process::CommandExt;
    /// winbase.h's.
    const CREATE_BREAKAWAY_FROM_JOB: u32 = 0x0100_0000;
    let Some((program, args)) = argv.split_first() else {
        return ExitCode::from(2);
    };
    let spawned = std::process::Command::new(program)
        .args(args)
        .creation_flags(CREATE_BREAKAWAY_FROM_JOB)
        .status();
    match spawned {
        Ok(status) => {
            println!("broke away: {status}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("breakaway refused: {e}");
            ExitCode::from(1)
        }
    }
}

fn log_line(line: &Value) {
    let Some(path) = std::env::var_os("FAKE_CLAUDE_LOG") else {
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

fn record(argv: &[String]) {
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("HARK_")
                || k.starts_with("WEBKIT_")
                || ["MCP_TOOL_TIMEOUT", "FAKE_MARKER", "GDK_GL"].contains(&k.as_str())
        })
        .collect();
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    log_line(
        &json!({"argv": argv, "env": env, "cwd": cwd, "pid": std::process::id(),
        "process": identity(std::process::id()), "session": default_session()}),
    );
}

/// The session id of a run not resumed: unique on this machine even where
/// every agent is pid 2 of its own PID namespace (confined by hark).
fn default_session() -> String {
    let me = identity(std::process::id());
    format!("fake-session-{}-{}", me["pid"], me["start"])
}

type Server = RunningService<RoleClient, ()>;

/// Spawns and initializes every server in the MCP configs.
async fn connect(configs: &[String]) -> Result<BTreeMap<String, Server>, ConnectError> {
    let mut servers = BTreeMap::new();
    for config in configs {
        let text = if config.trim_start().starts_with('{') {
            config.clone()
        } else {
            std::fs::read_to_string(config).map_err(|source| ConnectError::Read {
                config: config.clone(),
                source,
            })?
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|source| ConnectError::BadConfig {
                config: config.clone(),
                source,
            })?;
        for (name, server) in value["mcpServers"].as_object().into_iter().flatten() {
            let mut command =
                tokio::process::Command::new(server["command"].as_str().unwrap_or_default());
            for arg in server["args"].as_array().into_iter().flatten() {
                command.arg(arg.as_str().unwrap_or_default());
            }
            let transport =
                TokioChildProcess::new(command).map_err(|source| ConnectError::Start {
                    name: name.clone(),
                    source,
                })?;
            let client =
                ().serve(transport)
                    .await
                    .map_err(|source| ConnectError::Initialize {
                        name: name.clone(),
                        source: Box::new(source),
                    })?;
            servers.insert(name.clone(), client);
        }
    }
    Ok(servers)
}

/// The operator's ask tool, as the model names it.
const ASK_TOOL: &str = "mcp__operator__ask";

/// Set in a sub-agent's environment: the id its hooks' input names.
const SUB_AGENT_ENV: &str = "FAKE_CLAUDE_SUB_AGENT";

/// A tool call in a script line: `ASK {json}` or `TOOL name {json}`.
fn call(line: &str) -> Option<(String, Value)> {
    let (command, rest) = line.trim().split_once(' ')?;
    match command {
        "ASK" => match serde_json::from_str::<Value>(rest) {
            Ok(input @ Value::Object(_)) => Some((ASK_TOOL.to_owned(), input)),
            _ => None,
        },
        "TOOL" => {
            let (name, input) = rest.split_once(' ').unwrap_or((rest, "{}"));
            Some((name.to_owned(), serde_json::from_str(input).ok()?))
        }
        _ => None,
    }
}

/// Calls `tool` on `server` as Claude Code does: `_meta` carries the tool
/// use's id (`claudecode/toolUseId`) beside rmcp's `progressToken`.
async fn call_mcp(
    server: &Server,
    tool: &str,
    arguments: Value,
    use_id: &str,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        unreachable!("tool arguments are an object")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let mut meta = RequestMetaObject::new();
    meta.0
        .0
        .insert("claudecode/toolUseId".to_owned(), json!(use_id));
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(meta);
    let handle = server
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            options,
        )
        .await?;
    match handle.await_response().await? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// The text of a tool result's content.
fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

struct Session {
    id: String,
    args: Args,
    servers: BTreeMap<String, Server>,
    tool_names: Vec<String>,
    hooks: PreToolUse,
    /// What is kept for `--resume`: the script, where it is, the deferred use.
    saved: Saved,
    last_text: String,
    errors: u32,
    /// The exit status `EXIT n` set.
    status: u8,
}

impl Session {
    /// Prints the model's tool use, with a fresh id.
    fn tool_use(&mut self, name: &str, input: Value) -> ToolUse {
        self.saved.uses += 1;
        // Unique on this machine, as the real CLI's are, even where every
        // agent is pid 2 of its own PID namespace.
        let me = identity(std::process::id());
        let id = format!(
            "toolu_fake{}_{}_{}",
            me["pid"], me["start"], self.saved.uses
        );
        emit(
            json!({"type": "assistant", "session_id": self.id, "message": {"content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}]}}),
        );
        ToolUse {
            id,
            name: name.to_owned(),
            input,
        }
    }

    /// Prints a tool's result, as the CLI feeds it back to the model.
    fn tool_result(&mut self, use_id: &str, text: String, is_error: bool) {
        if is_error {
            self.errors += 1;
        }
        emit(
            json!({"type": "user", "session_id": self.id, "message": {"content": [
            {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": is_error}]}}),
        );
        self.last_text = text;
    }

    /// Fires the `PreToolUse` hooks that match a tool use; the most
    /// restrictive of their decisions.
    async fn pre_tool_use(&self, tool_use: &ToolUse) -> Decision {
        let matching = self.hooks.matching(&tool_use.name);
        if matching.is_empty() {
            return Decision::Normal;
        }
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut input = json!({
            "session_id": self.id,
            "transcript_path": saved::path(&self.id),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_use.name,
            "tool_input": tool_use.input,
            "tool_use_id": tool_use.id,
        });
        let server = tool_use
            .name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"));
        if let Some((server, _)) = server {
            input["mcp_server"] = json!({"name": server});
        }
        // A sub-agent's calls name it, as the real CLI's do.
        if let Ok(agent_id) = std::env::var(SUB_AGENT_ENV) {
            input["agent_id"] = json!(agent_id);
            input["agent_type"] = json!("general-purpose");
        }
        let mut decision = Decision::Normal;
        for hook in &matching {
            match hooks::run(hook, &tool_use.name, &input).await {
                Outcome::Decided(d) => decision = decision.max(d),
                Outcome::TimedOut => emit(hooks::timed_out_event(&self.id, &tool_use.id)),
            }
        }
        decision
    }

    /// Carries out a tool use the model made: its hooks, then the tool
    /// unless they refused it; the use back if they deferred it.
    async fn carry_out(&mut self, tool_use: &ToolUse) -> Option<ToolUse> {
        let (text, is_error) = match self.pre_tool_use(tool_use).await {
            Decision::Defer => return Some(tool_use.clone()),
            Decision::Deny(text) => (text, true),
            decision if tool_use.name == ASK_TOOL => self.ask(tool_use, decision).await,
            decision => self.tool(tool_use, decision).await,
        };
        self.tool_result(&tool_use.id, text, is_error);
        None
    }

    /// What a hook's `ask` comes to in `-p` mode: the permission prompt
    /// tool's verdict, or a refusal with the hook's reason.
    async fn ask_permission(&self, tool_use: &ToolUse, reason: String) -> Result<(), Refused> {
        match self.args.permission_prompt_tool.clone() {
            Some(prompt_tool) => self.permission(&prompt_tool, tool_use).await,
            None if reason.is_empty() => Err(Refused::NotGranted {
                name: tool_use.name.clone(),
            }),
            None => Err(Refused::Denied { message: reason }),
        }
    }

    /// Calls `mcp__operator__ask` as the model would, with the CLI's checks.
    async fn ask(&mut self, tool_use: &ToolUse, decision: Decision) -> (String, bool) {
        let name = ASK_TOOL;
        if !self.tool_names.iter().any(|t| t == name) {
            return (format!("No such tool available: {name}"), true);
        }
        let verdict = match decision {
            Decision::Allow => Ok(()),
            Decision::Ask(reason) => self.ask_permission(tool_use, reason).await,
            _ if self.args.allowed.iter().any(|t| t == name) => Ok(()),
            _ => Err(Refused::NotGranted {
                name: name.to_owned(),
            }),
        };
        if let Err(refused) = verdict {
            return (message(&refused), true);
        }
        let server = &self.servers["operator"];
        match call_mcp(server, "ask", tool_use.input.clone(), &tool_use.id).await {
            Ok(result) => (result_text(&result), result.is_error == Some(true)),
            Err(e) => (format!("MCP error: {e}"), true),
        }
    }

    /// Uses a tool as the model would, asking the permission prompt tool
    /// first where Claude Code would.
    async fn tool(&mut self, tool_use: &ToolUse, decision: Decision) -> (String, bool) {
        let name = tool_use.name.as_str();
        let needs_permission = !["Read", "Glob", "Grep", "LS"].contains(&name)
            && !self.args.allowed.iter().any(|t| t == name);
        let verdict = match decision {
            Decision::Allow => Ok(()),
            Decision::Ask(reason) => self.ask_permission(tool_use, reason).await,
            _ if !needs_permission => Ok(()),
            _ => match self.args.permission_prompt_tool.clone() {
                Some(prompt_tool) => self.permission(&prompt_tool, tool_use).await,
                None => Err(Refused::NotGranted {
                    name: name.to_owned(),
                }),
            },
        };
        match verdict.and_then(|()| perform(name, &tool_use.input)) {
            Ok(()) => (format!("performed {name}"), false),
            Err(refused) => (message(&refused), true),
        }
    }

    /// Asks the permission prompt tool (`mcp__SERVER__TOOL`) about a call.
    async fn permission(&self, prompt_tool: &str, tool_use: &ToolUse) -> Result<(), Refused> {
        let mut parts = prompt_tool.splitn(3, "__");
        let (Some("mcp"), Some(server), Some(tool)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::BadPromptTool {
                tool: prompt_tool.to_owned(),
            });
        };
        let Some(server) = self.servers.get(server) else {
            return Err(Refused::NoPromptServer {
                server: server.to_owned(),
            });
        };
        let arguments = json!({"tool_name": tool_use.name, "input": tool_use.input,
            "tool_use_id": tool_use.id});
        let result = call_mcp(server, tool, arguments, &tool_use.id)
            .await
            .map_err(Refused::PromptFailed)?;
        let text = result_text(&result);
        let Ok(verdict) = serde_json::from_str::<Value>(&text) else {
            return Err(Refused::NoVerdict { text });
        };
        match verdict["behavior"].as_str() {
            Some("allow") => Ok(()),
            _ => Err(Refused::Denied {
                message: verdict["message"].as_str().unwrap_or("denied").to_owned(),
            }),
        }
    }

    /// Several tool calls in one message (`BOTH A && B`): every use is
    /// printed, then each is carried out; the first one deferred is kept.
    async fn both(&mut self, rest: &str) -> Option<ToolUse> {
        let Some(calls) = rest.split(" && ").map(call).collect::<Option<Vec<_>>>() else {
            self.last_text = format!("bad BOTH line: {rest}");
            return None;
        };
        let uses: Vec<ToolUse> = calls
            .into_iter()
            .map(|(name, input)| self.tool_use(&name, input))
            .collect();
        let mut deferred = None;
        for tool_use in &uses {
            let this = self.carry_out(tool_use).await;
            deferred = deferred.or(this);
        }
        deferred
    }

    /// Follows the script from line `self.saved.next`, one command a line;
    /// the tool use it stopped at, if a hook deferred one.
    async fn follow(&mut self, argv: &[String]) -> Option<ToolUse> {
        while let Some(line) = self.saved.script.get(self.saved.next).cloned() {
            self.saved.next += 1;
            let (command, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
            let deferred = match command {
                "ASK" | "TOOL" => match call(&line) {
                    Some((name, input)) => {
                        let tool_use = self.tool_use(&name, input);
                        self.carry_out(&tool_use).await
                    }
                    None => {
                        self.last_text = format!("bad {command} line: {rest}");
                        None
                    }
                },
                "BOTH" => self.both(rest).await,
                "NESTED" => {
                    self.nested(rest, argv).await;
                    None
                }
                "SAY" => {
                    emit(
                        json!({"type": "assistant", "session_id": self.id, "message": {"content": [{"type": "text", "text": rest}]}}),
                    );
                    self.last_text = rest.to_owned();
                    None
                }
                "HANG" => std::future::pending().await,
                "SHELL" => {
                    self.shell(rest).await;
                    None
                }
                "BACKGROUND" => {
                    background();
                    None
                }
                "EXIT" => {
                    self.status = rest.trim().parse().unwrap_or(1);
                    None
                }
                _ => {
                    let text = format!("done: {line}");
                    emit(
                        json!({"type": "assistant", "session_id": self.id, "message": {"content": [{"type": "text", "text": text}]}}),
                    );
                    self.last_text = text;
                    None
                }
            };
            if deferred.is_some() {
                return deferred;
            }
        }
        None
    }

    /// Runs `sh -c COMMAND` (Windows: `cmd /C COMMAND`) as the Bash tool
    /// of a run that allows it does (no permission asked), and reports its
    /// output as the tool's result.
    async fn shell(&mut self, command: &str) {
        let tool_use = self.tool_use("Bash", json!({"command": command}));
        #[cfg(unix)]
        let mut shell = tokio::process::Command::new("sh");
        #[cfg(unix)]
        shell.args(["-c", command]);
        #[cfg(windows)]
        let mut shell = tokio::process::Command::new("cmd");
        // cmd takes the rest of its command line as it is, quotes and all.
        #[cfg(windows)]
        shell.arg("/C").raw_arg(command);
        let output = shell.stdin(std::process::Stdio::null()).output().await;
        let (text, is_error) = match output {
            Ok(out) => (
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
                !out.status.success(),
            ),
            Err(e) => (format!("cannot run sh: {e}"), true),
        };
        self.tool_result(&tool_use.id, text, is_error);
    }

    /// Runs a sub-agent (a child of this program) that inherits the MCP
    /// config and the settings, in a session of its own; its hooks' input
    /// carries `agent_id` and `agent_type` `general-purpose`.
    async fn nested(&mut self, input: &str, argv: &[String]) {
        let mut args: Vec<String> = Vec::new();
        let mut rest = argv.iter();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-p" | "--print" => {}
                "--resume" | "-r" => {
                    rest.next();
                }
                _ if Some(arg) == self.args.prompt.as_ref() => {}
                _ => args.push(arg.clone()),
            }
        }
        args.push("-p".into());
        args.push(format!("ASK {input}"));
        let exe = std::env::current_exe().expect("own path");
        let output = tokio::process::Command::new(exe)
            .args(&args)
            .env(SUB_AGENT_ENV, format!("afake{}", std::process::id()))
            .output()
            .await;
        match output {
            Ok(out) => {
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    if let Ok(mut event) = serde_json::from_str::<Value>(line) {
                        if event["type"] == "user" {
                            self.last_text = event["message"]["content"][0]["content"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                        }
                        event["parent_tool_use_id"] = json!("toolu_task");
                        if event["type"] != "result" && event["type"] != "system" {
                            emit(event);
                        }
                    }
                }
            }
            Err(e) => self.last_text = format!("sub-agent failed: {e}"),
        }
    }

    /// The final `result` event: the turn's end, or the deferred tool use.
    fn result(&self, deferred: Option<&ToolUse>) -> Value {
        match deferred {
            Some(tool_use) => json!({"type": "result", "subtype": "success",
                "session_id": self.id, "is_error": false, "result": "",
                "stop_reason": "tool_deferred", "terminal_reason": "tool_deferred",
                "deferred_tool_use": tool_use.to_json(),
                "duration_ms": 5, "total_cost_usd": 0.0, "num_turns": 1}),
            None => json!({"type": "result", "subtype": "success", "session_id": self.id,
                "is_error": self.status != 0, "result": self.last_text,
                "stop_reason": "end_turn", "terminal_reason": "completed",
                "duration_ms": 5, "total_cost_usd": 0.0, "num_turns": 1}),
        }
    }
}

/// What an allowed tool does: `Write` and `Edit` change the file for real.
fn perform(name: &str, input: &Value) -> Result<(), Refused> {
    let field = |k: &str| input[k].as_str().unwrap_or_default();
    let path = field("file_path");
    let write = |text: &str| {
        std::fs::write(path, text).map_err(|source| Refused::Write {
            path: path.to_owned(),
            source,
        })
    };
    match name {
        "Write" => write(field("content")),
        "Edit" => {
            let text = std::fs::read_to_string(path).map_err(|source| Refused::Read {
                path: path.to_owned(),
                source,
            })?;
            if !text.contains(field("old_string")) {
                return Err(Refused::OldStringNotFound {
                    path: path.to_owned(),
                });
            }
            write(&text.replacen(field("old_string"), field("new_string"), 1))
        }
        _ => Ok(()),
    }
}

#[tokio::main(flavor = "current_thread")]
#[allow(
    clippy::too_many_lines,
    reason = "a test double, not product code: the layout's 100 lines hold for hark's own crates"
)]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    #[cfg(windows)]
    if argv.first().map(String::as_str) == Some(BREAKAWAY_MARK) {
        return break_away(&argv[1..]);
    }
    #[cfg(windows)]
    if argv.first().map(String::as_str) == Some(SLEEP_MARK) {
        let seconds = argv.get(1).and_then(|s| s.parse().ok()).unwrap_or(600);
        std::thread::sleep(std::time::Duration::from_secs(seconds));
        return ExitCode::SUCCESS;
    }
    record(&argv);
    let args = match parse(&argv) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    if args.output_format.as_deref() == Some("stream-json") && !args.verbose {
        eprintln!("Error: When using --print, --output-format=stream-json requires --verbose");
        return ExitCode::from(1);
    }
    let saved = match &args.resume {
        None => Saved::default(),
        Some(id) => match Saved::load(id) {
            Some(saved) => saved,
            None => {
                let error = format!("No conversation found with session ID: {id}");
                eprintln!("{error}");
                if args.output_format.as_deref() == Some("stream-json") {
                    emit(
                        json!({"type": "result", "subtype": "error_during_execution",
                        "is_error": true, "num_turns": 0, "stop_reason": null,
                        "session_id": id, "errors": [error]}),
                    );
                }
                return ExitCode::from(1);
            }
        },
    };
    // Without a prompt, a resumed session goes on from the tool use it deferred.
    if args.prompt.is_none() && saved.deferred.is_none() {
        eprintln!(
            "Error: Input must be provided either through stdin or as a prompt argument when using --print"
        );
        return ExitCode::from(1);
    }
    let hooks = match PreToolUse::load(&args.settings) {
        Ok(hooks) => hooks,
        Err(e) => {
            eprintln!("{}", message(&e));
            return ExitCode::from(1);
        }
    };
    let servers = match connect(&args.mcp_configs).await {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("{}", message(&e));
            return ExitCode::from(1);
        }
    };
    let mut tool_names = ["Read", "Edit", "Write", "Bash"]
        .map(str::to_owned)
        .to_vec();
    for (name, server) in &servers {
        if let Ok(tools) = server.list_all_tools().await {
            tool_names.extend(tools.iter().map(|t| format!("mcp__{name}__{}", t.name)));
        }
    }
    tool_names.retain(|t| !args.disallowed.contains(t));
    let id = args.resume.clone().unwrap_or_else(default_session);
    let mut session = Session {
        id,
        args,
        servers,
        tool_names,
        hooks,
        saved,
        last_text: String::new(),
        errors: 0,
        status: 0,
    };
    let init = json!({"type": "system", "subtype": "init", "session_id": session.id,
        "tools": session.tool_names,
        "mcp_servers": session.servers.keys().map(|k| json!({"name": k, "status": "connected"})).collect::<Vec<_>>()});
    let mut deferred = None;
    match session.args.prompt.clone() {
        Some(prompt) => {
            session.saved.script = prompt.lines().map(str::to_owned).collect();
            session.saved.next = 0;
            session.saved.deferred = None;
        }
        // As the real CLI does, the deferred call is carried out before init.
        None => {
            let tool_use = session.saved.deferred.take().expect("checked above");
            deferred = session.carry_out(&tool_use).await;
        }
    }
    emit(init);
    let _ = session.saved.save(&session.id);
    if deferred.is_none() {
        deferred = session.follow(&argv).await;
    }
    emit(session.result(deferred.as_ref()));
    session.saved.deferred = deferred;
    if let Err(e) = session.saved.save(&session.id) {
        eprintln!("cannot save session {}: {e}", session.id);
    }
    for (_, server) in std::mem::take(&mut session.servers) {
        let _ = server.cancel().await;
    }
    ExitCode::from(session.status)
}
