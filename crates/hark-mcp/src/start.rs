//! The lean start of the agent's server (`hark mcp-operator-ask`, and the
//! `hark-ask` binary agents are pointed at): every agent and sub-agent
//! spawns one and waits for its `initialize` reply, so nothing is done
//! before serving that the server does not need (issue 41).
//!
//! Measured at 651b65a (bench/results/cold-start.md): with no config file,
//! `Config::load()` built the gate's default policy, parsing its 26 KB
//! TOML table (~0.3 MB of heap, the TOML parser's pages) for a policy this
//! server consults only when it classifies an `approve` call with no
//! daemon to ask. Without a config file the policy is now left to
//! [`McpSettings::policy`]'s `None`, built on first need; with one, the
//! file is loaded whole as before, so its errors are the same.

use hark_core::bridge::socket::SocketError;
use hark_core::config::{Config, ConfigError};
use hark_core::model::validate::Rules;

use crate::McpSettings;

/// Why the server could not start or stopped. The texts are those `hark`
/// prints for the same failures.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the MCP server stopped: {0}")]
    Mcp(Box<dyn std::error::Error + Send + Sync>),
}

/// The settings of a server an agent spawned (no hub): those
/// [`McpSettings::from_env`] makes of the loaded config, without building
/// the config's defaults when there is no file to load.
pub fn agent_settings(approvals: bool) -> Result<McpSettings, StartError> {
    let no_file = Config::path().is_none_or(|path| {
        matches!(std::fs::metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    });
    if no_file {
        // What `Config::default()` holds: its rules, and the gate's
        // defaults (left unbuilt).
        return Ok(McpSettings::from_env_with(
            Rules::default(),
            None,
            approvals,
        )?);
    }
    let config = Config::load()?;
    Ok(McpSettings::from_env(&config, approvals)?)
}

/// Serves `settings` on stdin/stdout on a current-thread runtime until the
/// agent closes it.
pub fn serve_agent(settings: McpSettings) -> Result<(), StartError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?
        .block_on(crate::OperatorServer::new(settings).serve_stdio())
        .map_err(StartError::Mcp)
}

/// Whether the words after the program name are the plain server: exactly
/// `mcp-operator-ask`, or `mcp-operator-ask --approvals`. Anything else
/// (`--hub`, `--help`, a typo) is for `hark`'s full command line. `Some`
/// holds `--approvals`.
pub fn plain_operator_ask<I, S>(words: I) -> Option<bool>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut words = words.into_iter();
    if words.next()?.as_ref() != "mcp-operator-ask" {
        return None;
    }
    match (words.next(), words.next()) {
        (None, _) => Some(false),
        (Some(flag), None) if flag.as_ref() == "--approvals" => Some(true),
        _ => None,
    }
}

/// The program agents are pointed at for the server, given the `hark`
/// that points them: `hark-ask` installed beside it (the same server,
/// in a binary that links nothing else, so it starts like a bare rmcp
/// server), else `hark` itself (`hark mcp-operator-ask`). The arguments are
/// the same either way. An AppImage, which names no `hark` file, is itself.
pub fn ask_server(hark: &std::path::Path) -> std::path::PathBuf {
    let beside =
        |dir: &std::path::Path| dir.join(format!("{ASK_BINARY}{}", std::env::consts::EXE_SUFFIX));
    let named_hark = hark.file_stem().is_some_and(|stem| stem == "hark");
    match hark.parent() {
        Some(dir) if named_hark && beside(dir).is_file() => beside(dir),
        _ => hark.to_owned(),
    }
}

/// The name of the server's own binary.
pub const ASK_BINARY: &str = "hark-ask";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lean_defaults_are_the_configs_defaults() {
        assert_eq!(Config::default().rules(), Rules::default());
    }

    #[test]
    fn agents_are_pointed_at_hark_ask_beside_hark_else_at_hark() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::consts::EXE_SUFFIX;
        let hark = dir.path().join(format!("hark{exe}"));
        let ask = dir.path().join(format!("hark-ask{exe}"));
        std::fs::write(&hark, "").unwrap();
        assert_eq!(ask_server(&hark), hark, "no hark-ask beside it");
        std::fs::write(&ask, "").unwrap();
        assert_eq!(ask_server(&hark), ask);
        let appimage = dir.path().join("hark-0.1.0-x86_64.AppImage");
        assert_eq!(ask_server(&appimage), appimage);
    }

    #[test]
    fn only_the_plain_forms_skip_the_full_command_line() {
        assert_eq!(plain_operator_ask(["mcp-operator-ask"]), Some(false));
        assert_eq!(
            plain_operator_ask(["mcp-operator-ask", "--approvals"]),
            Some(true)
        );
        for other in [
            &["mcp-operator-ask", "--hub"][..],
            &["mcp-operator-ask", "--hub", "https://hub"],
            &["mcp-operator-ask", "--approvals", "--hub"],
            &["mcp-operator-ask", "--help"],
            &["mcp-operator-ask", "--approvals=true"],
            &["mcp-config"],
            &[],
        ] {
            assert_eq!(plain_operator_ask(other), None, "{other:?}");
        }
    }
}
