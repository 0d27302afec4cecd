//! `hark serve --prompter script:FILE` in a sandbox: the operator is a
//! script that answers each question by its text at once (or after a delay,
//! or never, leaving the item to whoever drives the test), on the sandbox's
//! socket and store. Its stderr, the log, is followed.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::lines::{Lines, WaitError};
use crate::process::{self, EXIT_PATIENCE, ProcessError};
use crate::sandbox::Sandbox;

/// Why a daemon did not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot write {}", path.display())]
    WriteScript {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start hark serve")]
    Spawn(#[source] std::io::Error),
    #[error("hark serve has no stderr pipe")]
    NoStderr,
    /// It never said it serves: the wait's error has its last lines.
    #[error(transparent)]
    NotServing(#[from] WaitError),
}

/// How long the daemon may take to serve.
const START_PATIENCE: Duration = Duration::from_secs(20);

/// A running `hark serve`, killed if still running when dropped.
#[derive(Debug)]
pub struct Daemon {
    /// Where its socket, store and config are.
    pub sandbox: Sandbox,
    child: Child,
    /// Its stderr (`--log-format json` among `args` makes it events).
    pub log: Lines,
}

impl Daemon {
    /// Writes `script` into the sandbox and starts `hark serve` on it, with
    /// `args` added; returns once it serves.
    pub fn start(sandbox: &Sandbox, script: &Value, args: &[&str]) -> Result<Daemon, DaemonError> {
        let script_path = sandbox.path("script.json");
        std::fs::write(&script_path, script.to_string()).map_err(|source| {
            DaemonError::WriteScript {
                path: script_path.clone(),
                source,
            }
        })?;
        let mut child = sandbox
            .hark(["serve", "--prompter"])
            .arg(format!("script:{}", script_path.display()))
            .arg("--socket")
            .arg(sandbox.socket())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(DaemonError::Spawn)?;
        let stderr = child.stderr.take().ok_or(DaemonError::NoStderr)?;
        let daemon = Daemon {
            sandbox: sandbox.clone(),
            child,
            log: Lines::follow("hark serve", stderr),
        };
        daemon
            .log
            .wait("hark serving the operator", START_PATIENCE, |lines| {
                lines
                    .iter()
                    .any(|l| l.text.contains("hark is serving the operator"))
                    .then_some(())
            })?;
        Ok(daemon)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, as a user's Ctrl-C or a service manager would.
    pub fn terminate(&self) -> Result<(), ProcessError> {
        process::terminate(self.pid())
    }

    /// Stops it with SIGTERM and waits; whether it exited cleanly (it is
    /// killed when it outstays [`EXIT_PATIENCE`]).
    pub fn stop(mut self) -> Result<bool, ProcessError> {
        self.terminate()?;
        let status = process::wait_or_kill(&mut self.child, EXIT_PATIENCE);
        Ok(status.is_some_and(|s| s.success()))
    }

    /// Kills it with SIGKILL (no clean-up at all) and hands back its
    /// sandbox, so a new daemon can start on the same store.
    pub fn kill9(mut self) -> Sandbox {
        self.child.kill().expect("SIGKILL to hark serve");
        self.child.wait().expect("hark serve's exit");
        self.sandbox.clone()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
