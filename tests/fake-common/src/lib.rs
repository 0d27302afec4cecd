//! What hark's fake agents (`fake-claude`, `fake-codex`, `fake-gemini`,
//! `fake-opencode`) share, so that each holds only what its own CLI does:
//!
//! - [`identity`]: the process as the tests find it from outside a
//!   confinement, and the ids made unique by it;
//! - [`log`]: the JSON lines a fake appends to the file its `FAKE_*_LOG`
//!   names, and the hark environment they record;
//! - [`mcp`]: the MCP client (rmcp) a fake starts its servers with and
//!   calls their tools through;
//! - [`script`]: the script in the prompt that says what a fake does, one
//!   command a line;
//! - [`session`]: where a fake keeps the sessions it can be resumed in;
//! - [`words`]: a command line read as the Node CLIs (yargs) read it;
//! - [`piped_stdin`]: what a CLI reads of its stdin before it starts;
//! - [`main`] and [`OrExit`]: how a fake's process runs, to the status it
//!   exits with, and a run that cannot go on, told on stderr.

pub mod identity;
pub mod log;
pub mod mcp;
pub mod script;
pub mod session;
pub mod words;

use std::fmt::Display;
use std::future::Future;
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// Whatever stdin holds, read to its end, unless it is a terminal (as
/// `opencode run` and `gemini -p` read it before they start).
pub fn piped_stdin() -> String {
    let mut stdin = String::new();
    if !std::io::stdin().is_terminal() {
        let _ = std::io::stdin().read_to_string(&mut stdin);
    }
    stdin
}

/// A step a run cannot go on without: its error is what the CLI prints on
/// stderr, and the status it exits with.
pub trait OrExit<T> {
    /// The value; else the error on stderr, and the run's end with `status`.
    fn or_exit(self, status: u8) -> Result<T, ExitCode>;
}

impl<T, E: Display> OrExit<T> for Result<T, E> {
    fn or_exit(self, status: u8) -> Result<T, ExitCode> {
        self.map_err(|e| {
            eprintln!("{e}");
            ExitCode::from(status)
        })
    }
}

/// The tokio runtime a fake runs on, as its `#[tokio::main]` would make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `flavor = "current_thread"`.
    CurrentThread,
    /// The default: a thread a core.
    MultiThread,
}

/// Runs a fake: `run` is given its argv (without the program's name) on a
/// tokio `runtime`, and comes to the status the process exits with
/// (`Err`: it ended early, having said why on stderr).
pub fn main<F>(runtime: Runtime, run: impl FnOnce(Vec<String>) -> F) -> ExitCode
where
    F: Future<Output = Result<ExitCode, ExitCode>>,
{
    let argv = std::env::args().skip(1).collect();
    let mut builder = match runtime {
        Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Runtime::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .expect("Failed building the Runtime")
        .block_on(run(argv))
        .unwrap_or_else(|status| status)
}
