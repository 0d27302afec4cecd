//! `hark-ask`: `hark mcp-operator-ask`, the MCP server every agent and
//! sub-agent spawns, in a binary of its own. `hark` links the daemon, the
//! web surface, the hub client, TLS and clap's whole command line: 55,000
//! relocations and ~240 copied pages before `main` (issue 41,
//! bench/results/cold-start.md). This binary links only the server, so it
//! answers `initialize` as soon as a bare rmcp server does.
//!
//! `hark-ask mcp-operator-ask [--approvals]` serves exactly as `hark` does
//! (the same code, [`hark_mcp::start`]); any other command line (`--hub`,
//! `--help`, …) is `hark`'s, run in this process's place from beside it.
//! `hark mcp-config` and `hark run` point agents here when it is installed
//! beside `hark` ([`hark_mcp::start::ask_server`]).

use std::ffi::OsString;
use std::process::ExitCode;

use hark_core::trace::LogFormat;
use hark_mcp::start::{agent_settings, plain_operator_ask, serve_agent};
use tracing::level_filters::LevelFilter;

fn main() -> ExitCode {
    let words: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(approvals) = plain_operator_ask(&words) else {
        return run_hark(words);
    };
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    match agent_settings(approvals).and_then(serve_agent) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // As `hark` reports it (none of these has a hint).
            eprintln!("hark: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `hark WORDS…` from beside this binary in its place.
fn run_hark(words: Vec<OsString>) -> ExitCode {
    let hark = std::env::current_exe()
        .map(|exe| exe.with_file_name(format!("hark{}", std::env::consts::EXE_SUFFIX)));
    let hark = match hark {
        Ok(hark) => hark,
        Err(e) => {
            eprintln!("hark: cannot find this hark's path: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut command = std::process::Command::new(&hark);
    command.args(words);
    #[cfg(unix)]
    let failed = std::os::unix::process::CommandExt::exec(&mut command);
    #[cfg(not(unix))]
    let failed = match command.status() {
        Ok(status) => {
            return ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1));
        }
        Err(e) => e,
    };
    eprintln!("hark: cannot start {}: {failed}", hark.display());
    ExitCode::FAILURE
}
