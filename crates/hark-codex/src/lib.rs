//! hark's bridge to an interactive Codex (the terminal UI, not `codex
//! exec`): its approval prompts reach the operator, and the operator's
//! verdict answers them, while the terminal's own dialog stays live —
//! whichever answers first wins, and the other is withdrawn.
//!
//! Measured on Codex 0.171.0 (`docs/src/agents/codex-interactive.md`):
//! the TUI is a client of a background app-server daemon, reached over
//! `$CODEX_HOME/app-server-control/app-server-control.sock` (WebSocket,
//! JSON-RPC). A second client that resumes a thread is sent its prompts
//! (a pending one replayed), may answer them, and is told when another
//! client answered (`serverRequest/resolved`). Every client hears each
//! thread's status, so the bridge resumes a thread the moment it waits on
//! an approval, and polls nothing.
//!
//! - [`app_server`]: the connection (WebSocket over the unix socket, the
//!   server's user checked).
//! - [`prompt`]: a prompt read as the approval hark files; the verdict
//!   written as its answer.
//! - [`bridge`]: the loop.
//!
//! What it leaves to the terminal: forms an MCP server asks, Codex's own
//! questions (`request_user_input`, Plan mode only), permission-profile
//! prompts. With `--no-daemon` Codex opens no socket and nothing bridges.

#[cfg(unix)]
pub mod app_server;
#[cfg(unix)]
mod bridge;
pub mod prompt;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the items an interactive Codex's prompts filed name their client.
pub const CLIENT: &str = "codex (interactive)";

/// Where the operator is.
#[derive(Debug, Clone)]
pub struct Operator {
    /// hark's daemon socket.
    pub socket: PathBuf,
    /// The bounded wait to ask for (the daemon's default when `None`);
    /// when it ends unanswered, the prompt stays the terminal's.
    pub timeout: Option<Duration>,
}

/// Bridges the app-server at `socket` to `operator` until the server goes
/// away (the Codex daemon stopped).
pub async fn run(socket: &Path, operator: Operator) -> Result<(), CodexError> {
    #[cfg(unix)]
    return bridge::run(socket, operator).await;
    #[cfg(not(unix))]
    {
        let _ = (socket, operator);
        Err(CodexError::Unsupported)
    }
}

/// Why the bridge stopped or did not start.
#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    #[error("cannot connect to Codex's app-server at {}: {source}", socket.display())]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is served by another user; not connecting", .0.display())]
    NotOwner(PathBuf),
    #[error("the app-server refused the WebSocket: {0}")]
    Handshake(String),
    #[error("the app-server answered with an error: {0}")]
    Rpc(String),
    #[error("the app-server went away")]
    Closed,
    #[error("cannot take the bridge's lock {}: {source}", path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("an interactive Codex cannot be bridged on this platform yet")]
    Unsupported,
}

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(home) => Some(PathBuf::from(home)),
        None => std::env::home_dir().map(|home| home.join(".codex")),
    }
}

/// The app-server daemon's control socket in Codex home `home`.
pub fn control_socket(home: &Path) -> PathBuf {
    home.join("app-server-control")
        .join("app-server-control.sock")
}

/// The one bridge of a Codex home: held while it runs, so each session's
/// `SessionStart` hook may start one and all but the first stop at once.
#[derive(Debug)]
pub struct Only {
    _held: File,
}

impl Only {
    /// Takes the lock `home/hark-codex-bridge.lock` (in the Codex home,
    /// which only its user writes); `None` when another bridge holds it.
    pub fn take(home: &Path) -> Result<Option<Only>, CodexError> {
        let path = home.join("hark-codex-bridge.lock");
        let locked = |source| CodexError::Lock {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(locked)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Only { _held: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(locked(source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bridge_per_codex_home() {
        let dir = std::env::temp_dir().join(format!("hark-codex-{}", std::process::id()));
        let (home, other) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let first = Only::take(&home).unwrap();
        assert!(first.is_some());
        assert!(Only::take(&home).unwrap().is_none());
        assert!(Only::take(&other).unwrap().is_some());
        drop(first);
        assert!(Only::take(&home).unwrap().is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
