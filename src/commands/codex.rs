//! `hark codex-bridge`, and Codex's `SessionStart` hook that starts it:
//! an interactive Codex's approval prompts carried to the operator
//! ([`hark_codex`]).

use std::path::{Path, PathBuf};

use hark_core::config::Config;
use hark_core::trace::LogFormat;
use tracing::level_filters::LevelFilter;

use crate::cli::CodexBridgeArgs;
use crate::commands::{Failed, this_hark};
use crate::exit::ExitStatus;

/// `hark codex-bridge [--codex-home DIR] [--detach]`.
pub fn bridge(args: CodexBridgeArgs) -> Result<ExitStatus, Failed> {
    let Some(home) = args.codex_home.or_else(hark_codex::codex_home) else {
        eprintln!("hark: cannot tell Codex's home (neither CODEX_HOME nor HOME is set)");
        return Ok(ExitStatus::Failure);
    };
    if args.detach {
        return start(&home).map(|()| ExitStatus::Success);
    }
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    let settings = hark_mcp::McpSettings::from_env(&Config::load()?, false)?;
    let only = match hark_codex::Only::take(&home) {
        Ok(Some(only)) => only,
        Ok(None) => {
            eprintln!(
                "hark: another hark codex-bridge serves {} already",
                home.display()
            );
            return Ok(ExitStatus::Success);
        }
        Err(e) => {
            eprintln!("hark: {e}");
            return Ok(ExitStatus::Failure);
        }
    };
    let operator = hark_codex::Operator {
        socket: settings.socket,
        timeout: settings.timeout,
    };
    let socket = hark_codex::control_socket(&home);
    let ended = crate::commands::runtime()?.block_on(hark_codex::run(&socket, operator));
    drop(only);
    match ended {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e @ hark_codex::CodexError::Connect { .. }) => {
            eprintln!("hark: {e}");
            eprintln!(
                "hint: start `codex` first (its terminal UI starts the app-server; `--no-daemon` opens none), or let `hark hooks install --agent codex` start the bridge with each session"
            );
            Ok(ExitStatus::Failure)
        }
        Err(e) => {
            eprintln!("hark: {e}");
            Ok(ExitStatus::Failure)
        }
    }
}

/// Codex's `SessionStart` hook: starts the bridge of this Codex home in
/// the background (one that runs already keeps it; the new one stops at
/// once), prints nothing, and always exits 0 — the session starts either
/// way.
pub fn session_start() -> ExitStatus {
    // Codex writes the session's facts on stdin; the bridge learns its
    // threads from the app-server itself.
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    match hark_codex::codex_home() {
        Some(home) => {
            if let Err(e) = start(&home) {
                tracing::warn!("the Codex bridge did not start: {e}");
            }
        }
        None => tracing::warn!("no CODEX_HOME or HOME: the Codex bridge did not start"),
    }
    ExitStatus::Success
}

/// `hark codex-bridge --codex-home HOME` in a process group of its own,
/// its output nowhere: it outlives the hook, and ends with the app-server.
fn start(home: &Path) -> Result<(), Failed> {
    let hark: PathBuf = this_hark()?;
    let mut command = std::process::Command::new(&hark);
    command
        .arg("codex-bridge")
        .arg("--codex-home")
        .arg(home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .spawn()
        .map(drop)
        .map_err(|source| Failed::AppExec { path: hark, source })
}
