//! What outlives a tool call: `BACKGROUND`'s long sleep, and on Windows
//! this program standing in for `sleep` and for a process breaking away
//! from its job object.

#[cfg(windows)]
use std::process::ExitCode;

use fake_common::identity::identity;
use serde_json::json;

use crate::LOG;

/// Starts `sleep 600` with nothing of ours open, and logs its pid. Windows
/// has no `sleep`: this program stands in, told by [`SLEEP_MARK`].
pub fn background() {
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
        .arg(std::env::var_os(LOG.var()).unwrap_or_default());
    let spawned = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(child) = spawned {
        LOG.line(&json!({"background_pid": child.id(), "background": identity(child.id())}));
    }
}

/// `fake-claude --fake-sleep SECONDS [MARK]` only sleeps (Windows's `sleep`).
#[cfg(windows)]
pub const SLEEP_MARK: &str = "--fake-sleep";

/// `fake-claude --fake-breakaway PROGRAM ARGS…` starts PROGRAM out of its
/// job object (`CREATE_BREAKAWAY_FROM_JOB`), as a tool leaving the agent's
/// job would, and says how that went on its first line: `broke away`, or
/// `breakaway refused: ERROR` (exit status 1).
#[cfg(windows)]
pub const BREAKAWAY_MARK: &str = "--fake-breakaway";

#[cfg(windows)]
pub fn break_away(argv: &[String]) -> ExitCode {
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
