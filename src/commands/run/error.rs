//! Why a run could not start or go on, and what the user can do about it.

use std::ffi::OsString;
use std::path::PathBuf;

use hark_core::agent::NoCommandLine;
use hark_core::bridge::socket::SocketError;
use hark_core::config::ConfigError;
use hark_core::gate::intake::{GivenError, IntakeError};

/// Why a run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Hub(#[from] Box<crate::commands::hub::AgentDaemonError>),
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error("--answer: {0}")]
    Given(GivenError),
    #[error("--answer {0:?}: write it as ID=VALUE")]
    GivenShape(String),
    #[error(transparent)]
    Wrap(#[from] NoCommandLine),
    #[error("--wrap: {0}")]
    NotExec(#[from] hark_core::agent::codex::NotExec),
    #[error("--wrap: {0}")]
    NotRun(#[from] hark_core::agent::opencode::NotRun),
    #[error("--wrap: {0}")]
    NoPrompt(#[from] hark_core::agent::gemini::NoPrompt),
    #[error(transparent)]
    GeminiSettings(#[from] hark_core::agent::gemini::UserSettings),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error("the timeout must be a positive number of seconds, not {0}")]
    Timeout(f64),
    /// Flags that do not go together, or are missing.
    #[error("{0}")]
    Usage(&'static str),
    #[error("the paused agent cannot be resumed: {0}")]
    Unresumable(#[from] hark_core::agent::wrapped::NotResumable),
    #[error("cannot find this hark's path: {0}")]
    ThisHark(std::io::Error),
    #[error("cannot read --mcp-config {config}: {source}")]
    McpConfigRead {
        config: String,
        source: std::io::Error,
    },
    #[error("--mcp-config {config} is not JSON: {source}")]
    McpConfigJson {
        config: String,
        source: serde_json::Error,
    },
    #[error("cannot read --settings {settings}: {source}")]
    SettingsRead {
        settings: String,
        source: std::io::Error,
    },
    #[error("--settings {settings} is not JSON: {source}")]
    SettingsJson {
        settings: String,
        source: serde_json::Error,
    },
    #[error("cannot write the MCP config: {0}")]
    WriteConfig(std::io::Error),
    #[error("cannot start the agent {program:?}: {source}")]
    Spawn {
        program: OsString,
        source: std::io::Error,
    },
    #[error("cannot follow the agent: {0}")]
    Agent(std::io::Error),
    /// Windows: the agent's job object (what tells its processes apart,
    /// and stops them all) could not be made or joined; nothing runs
    /// outside one.
    #[cfg(windows)]
    #[error("cannot hold the agent in its job object: {0}")]
    Job(std::io::Error),
    #[error("cannot read this directory: {0}")]
    Cwd(std::io::Error),
    #[error("cannot read the intake {}: {source}", path.display())]
    ReadIntake {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the intake {} is not JSON: {source}", path.display())]
    IntakeJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("the questions cannot be sent: {0}")]
    Encode(serde_json::Error),
    /// A read-only Claude run turns on Claude Code's Bash sandbox, which
    /// refuses to start without these.
    #[error(
        "--read-only turns on Claude Code's Bash sandbox, which needs {}: there is no {} on PATH",
        hark_core::agent::sandbox::NEEDS.join(" and "),
        .missing.join(" or ")
    )]
    NoSandbox { missing: Vec<&'static str> },
}

impl RunError {
    /// What the user can do about it.
    pub(super) fn hint(&self) -> Option<&'static str> {
        match self {
            RunError::Spawn { source, .. }
                if source.kind() == std::io::ErrorKind::ArgumentListTooLong =>
            {
                Some(
                    "the prompt is longer than the system lets a command line be; put the long part in a file and tell the agent to read it",
                )
            }
            RunError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Some(
                    "install Claude Code (or the Codex CLI, OpenCode or Gemini CLI), or name the agent with --agent PATH",
                )
            }
            RunError::NotExec(_) => Some("hark run --wrap -- codex exec [flags] \"PROMPT\""),
            RunError::NotRun(_) => {
                Some("hark run --wrap -- opencode run --format json [flags] \"PROMPT\"")
            }
            RunError::NoPrompt(_) => Some(
                "hark run --wrap -- gemini -p \"PROMPT\" --output-format stream-json --skip-trust [flags]",
            ),
            RunError::GeminiSettings(_) => {
                Some("hark merges its server into them: remove the comments, or fix the JSON")
            }
            RunError::NoSandbox { .. } => Some("apt install bubblewrap socat"),
            _ => None,
        }
    }
}
