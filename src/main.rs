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
    let cli = cli::Cli::parse();
    match commands::run(cli.command.unwrap_or(cli::Command::App(Default::default()))) {
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
