//! `hark mcp-operator-ask`, the MCP server an agent spawns, and `hark
//! mcp-config`, which prints the config that names it.

use std::io::Read;

use hark_core::agent::clients::{self, Client};
use hark_core::config::Config;
use hark_core::trace::LogFormat;
use tracing::level_filters::LevelFilter;

use crate::cli::{AgentKindArg, HookArgs, HookEvent, McpArgs, McpConfigArgs};
use crate::commands::{Failed, this_hark};
use crate::exit::ExitStatus;

/// Serves MCP on stdin/stdout until the agent closes it. Without `--hub`
/// it starts the lean way ([`hark_mcp::start`]), as `hark-ask` does.
pub fn operator_ask(args: McpArgs) -> Result<ExitStatus, Failed> {
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    let Some(url) = args.hub else {
        use hark_mcp::start::{StartError, agent_settings, serve_agent};
        agent_settings(args.approvals)
            .and_then(serve_agent)
            .map_err(|e| match e {
                StartError::Config(e) => Failed::Config(e),
                StartError::Socket(e) => Failed::Socket(e),
                StartError::Runtime(e) => Failed::Runtime(e),
                StartError::Mcp(e) => Failed::Mcp(e),
            })?;
        return Ok(ExitStatus::Success);
    };
    let config = Config::load()?;
    let settings = hark_mcp::McpSettings::from_env(&config, args.approvals)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failed::Runtime)?;
    runtime.block_on(crate::commands::hub::serve_agent(url, settings))?;
    Ok(ExitStatus::Success)
}

/// `hark mcp-studio`: the MCP server the operator's own agent dispatches
/// agents through, and answers them in.
pub fn studio() -> Result<ExitStatus, Failed> {
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    let settings = hark_mcp::studio::StudioSettings {
        hark: this_hark()?,
        socket: hark_core::bridge::socket::app_socket_path()?,
        reflex: std::time::Duration::from_millis(Config::load()?.studio_reflex_ms),
    };
    crate::commands::runtime()?
        .block_on(hark_mcp::studio::Studio::new(settings).serve_stdio())
        .map_err(Failed::Mcp)?;
    Ok(ExitStatus::Success)
}

/// Claude Code's hook: reads its input on stdin, prints its decision (or
/// nothing: the call goes its ordinary way). Always exits 0: a hook that
/// fails must not stop the agent's call, which reports its own errors.
pub fn hook(args: HookArgs) -> Result<ExitStatus, Failed> {
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    if let HookEvent::SessionStart = args.event {
        return Ok(crate::commands::codex::session_start());
    }
    let mut text = String::new();
    let limit = hark_core::bridge::wire::MAX_FRAME as u64;
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin().take(limit), &mut text) {
        tracing::warn!("cannot read the hook's input: {e}");
        return Ok(ExitStatus::Success);
    }
    let config = Config::load()?;
    let settings = hark_mcp::McpSettings::from_env(&config, false)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failed::Runtime)?;
    let decision = match args.event {
        HookEvent::PreToolUse => {
            let input: hark_mcp::hook::HookInput = match serde_json::from_str(&text) {
                Ok(input) => input,
                Err(e) => {
                    tracing::warn!("the hook's input is not Claude Code's PreToolUse input: {e}");
                    return Ok(ExitStatus::Success);
                }
            };
            runtime.block_on(hark_mcp::hook::pre_tool_use(
                &settings,
                &input,
                args.approvals,
            ))
        }
        HookEvent::PermissionRequest | HookEvent::PostToolUse | HookEvent::SessionStart => {
            let input: hark_mcp::permission::PermissionInput = match serde_json::from_str(&text) {
                Ok(input) => input,
                Err(e) => {
                    tracing::warn!("the hook's input is not Claude Code's: {e}");
                    return Ok(ExitStatus::Success);
                }
            };
            runtime.block_on(async {
                match args.event {
                    HookEvent::PostToolUse => {
                        hark_mcp::permission::ran(&settings, &input).await;
                        None
                    }
                    _ => {
                        hark_mcp::permission::permission_request(&settings, &input, answered_here())
                            .await
                    }
                }
            })
        }
    };
    if let Some(decision) = decision {
        println!("{decision}");
    }
    Ok(ExitStatus::Success)
}

/// Resolves when Claude Code is done with the hook because its dialog was
/// answered in the terminal: it signals the hook, or closes the pipe the
/// hook's decision would go to. The signals are caught from the call on
/// (inside the runtime), before the item is filed.
fn answered_here() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (closed_tx, closed) = tokio::sync::oneshot::channel::<()>();
        // Blocks in poll(2) until the reader of stdout is gone; a detached
        // thread, ended with the process.
        std::thread::spawn(move || {
            use rustix::event::{PollFd, PollFlags, poll};
            let stdout = std::io::stdout();
            let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
            loop {
                match poll(&mut fds, None) {
                    Ok(_) if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) => break,
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
            let _ = closed_tx.send(());
        });
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        async move {
            async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = recv(term.as_mut()) => {}
                () = recv(hup.as_mut()) => {}
                () = recv(int.as_mut()) => {}
                Ok(()) = closed => {}
            }
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>()
}

/// Prints `{"mcpServers":{"operator":{…}}}` naming this `hark`, or (with
/// `--park-hook`) the `--settings` that add its park hook.
pub fn config(args: McpConfigArgs) -> Result<ExitStatus, Failed> {
    let hark = this_hark()?;
    // The server's own binary when it is installed beside this `hark`.
    let ask = hark_mcp::start::ask_server(&hark);
    eprintln!(
        "note: an agent you start yourself is not confined: its tools can reach hark's socket, store and config, and its questions are labelled \"not confined\"; `hark run --wrap -- YOUR COMMAND` starts it confined"
    );
    let client = match args.agent {
        AgentKindArg::Claude | AgentKindArg::Codex => None,
        AgentKindArg::Cursor => Some(Client::Cursor),
        AgentKindArg::Gemini => Some(Client::Gemini),
        AgentKindArg::Goose => Some(Client::Goose),
        AgentKindArg::Opencode => Some(Client::Opencode),
        AgentKindArg::Vscode => Some(Client::Vscode),
    };
    if let Some(client) = client {
        if args.park_hook {
            eprintln!(
                "hark: the park hook is Claude Code's (a PreToolUse hook that defers a call)"
            );
            return Ok(ExitStatus::Refused);
        }
        let found = clients::config(client, &ask, Config::load()?.ask_timeout());
        print!("{}", found.text);
        if !found.text.ends_with('\n') {
            println!();
        }
        eprintln!("hark: merge this into {}", found.file);
        let untested = match client.tested() {
            true => "",
            false => " (documented, not tested with hark)",
        };
        eprintln!("note: {}{untested}", found.caveat);
        return Ok(ExitStatus::Success);
    }
    if args.agent == AgentKindArg::Codex {
        if args.park_hook {
            eprintln!(
                "hark: the park hook is Claude Code's (a PreToolUse hook); Codex has none to defer a call with"
            );
            return Ok(ExitStatus::Refused);
        }
        let config = Config::load()?;
        for word in hark_core::agent::codex::overrides(&ask, config.ask_timeout()) {
            println!("-c");
            println!("{word}");
        }
        return Ok(ExitStatus::Success);
    }
    if args.park_hook {
        let config = Config::load()?;
        let command = hark_core::agent::hooks::hook_command(&hark);
        let settings = hark_core::agent::hooks::with_park_hook(
            serde_json::Value::Null,
            &command,
            config.ask_timeout(),
            false,
        );
        println!("{settings}");
        return Ok(ExitStatus::Success);
    }
    println!(
        "{}",
        hark_core::agent::mcp_config(&ask, Default::default(), false)
    );
    Ok(ExitStatus::Success)
}
