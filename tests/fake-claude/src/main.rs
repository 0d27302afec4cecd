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

mod args;
mod background;
mod hooks;
mod saved;
mod session;

use std::collections::BTreeMap;
use std::error::Error;
use std::process::ExitCode;

use args::{inline_or_file, parse};
use fake_common::identity::{Identity, identity};
use fake_common::log::{Log, cwd, own_hark_env};
use fake_common::mcp::{self, Server, StartError};
use fake_common::{OrExit, Runtime};
use hooks::PreToolUse;
use rmcp::service::ClientInitializeError;
use saved::Saved;
use serde_json::{Value, json};
use session::{Session, emit};

/// Where the log goes when the tests ask for one.
const LOG: Log = Log::new("FAKE_CLAUDE_LOG");

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

/// Logs this run's argv, the hark environment it got, and who it is.
fn record(argv: &[String]) {
    let env =
        own_hark_env(|k| k.starts_with("WEBKIT_") || ["MCP_TOOL_TIMEOUT", "GDK_GL"].contains(&k));
    LOG.line(
        &json!({"argv": argv, "env": env, "cwd": cwd(), "pid": std::process::id(),
        "process": identity(std::process::id()), "session": default_session()}),
    );
}

/// The session id of a run not resumed: unique on this machine even where
/// every agent is pid 2 of its own PID namespace (confined by hark).
fn default_session() -> String {
    let me = Identity::me();
    format!("fake-session-{}-{}", me.pid, me.start)
}

/// Spawns and initializes every server in the MCP configs.
async fn connect(configs: &[String]) -> Result<BTreeMap<String, Server>, ConnectError> {
    let mut servers = BTreeMap::new();
    for config in configs {
        let text = inline_or_file(config).map_err(|source| ConnectError::Read {
            config: config.clone(),
            source,
        })?;
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
            let client = mcp::start(command).await.map_err(|e| match e {
                StartError::Spawn(source) => ConnectError::Start {
                    name: name.clone(),
                    source,
                },
                StartError::Initialize(source) => ConnectError::Initialize {
                    name: name.clone(),
                    source,
                },
            })?;
            servers.insert(name.clone(), client);
        }
    }
    Ok(servers)
}

fn main() -> ExitCode {
    fake_common::main(Runtime::CurrentThread, run_cli)
}

/// The run, to the status it exits with (`Err`: it ended early, having
/// said why on stderr).
async fn run_cli(argv: Vec<String>) -> Result<ExitCode, ExitCode> {
    #[cfg(windows)]
    if argv.first().map(String::as_str) == Some(background::BREAKAWAY_MARK) {
        return Ok(background::break_away(&argv[1..]));
    }
    #[cfg(windows)]
    if argv.first().map(String::as_str) == Some(background::SLEEP_MARK) {
        let seconds = argv.get(1).and_then(|s| s.parse().ok()).unwrap_or(600);
        std::thread::sleep(std::time::Duration::from_secs(seconds));
        return Ok(ExitCode::SUCCESS);
    }
    record(&argv);
    let args = parse(&argv).or_exit(1)?;
    if args.output_format.as_deref() == Some("stream-json") && !args.verbose {
        eprintln!("Error: When using --print, --output-format=stream-json requires --verbose");
        return Err(ExitCode::from(1));
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
                return Err(ExitCode::from(1));
            }
        },
    };
    // Without a prompt, a resumed session goes on from the tool use it deferred.
    if args.prompt.is_none() && saved.deferred.is_none() {
        eprintln!(
            "Error: Input must be provided either through stdin or as a prompt argument when using --print"
        );
        return Err(ExitCode::from(1));
    }
    let hooks = PreToolUse::load(&args.settings)
        .map_err(|e| message(&e))
        .or_exit(1)?;
    let servers = connect(&args.mcp_configs)
        .await
        .map_err(|e| message(&e))
        .or_exit(1)?;
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
    mcp::stop(std::mem::take(&mut session.servers).into_values()).await;
    Ok(ExitCode::from(session.status))
}
