//! `hark`: the one command users and agents type.
//!
//! # Layout
//! - [`cli`]: the command line as clap parses it, one `Args` struct per command.
//! - [`commands`]: one module per command; all printing and `hint:` text
//!   live there.
//! - [`exit`]: the one [`exit::ExitStatus`] every command returns, and its
//!   exit code.
//! - [`terminal`]: the prompter that asks on this terminal (`hark serve
//!   --prompter terminal`). It reads stdin and prints, so it lives with the
//!   binary that owns the terminal, not in the core, which prints nothing.

mod cli;
mod commands;
mod exit;
mod terminal;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The agent's MCP server, spawned per agent and sub-agent, skips
    // building the whole command line's parser in its plain forms
    // (`mcp-operator-ask [--approvals]`; issue 41).
    let command = match hark_mcp::start::plain_operator_ask(std::env::args_os().skip(1)) {
        Some(approvals) => cli::Command::McpOperatorAsk(cli::McpArgs {
            approvals,
            hub: None,
        }),
        None => cli::Cli::parse()
            .command
            .unwrap_or(cli::Command::App(Default::default())),
    };
    match commands::run(command) {
        Ok(status) => status.into(),
        Err(failed) => {
            eprintln!("hark: {failed}");
            if let Some(hint) = failed.hint() {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}
