//! The Codex CLI (`codex exec`): the `-c key=value` overrides that attach
//! hark's `operator` server without touching the user's config (measured on
//! Codex 0.171.0; issue 16):
//! - Codex passes an MCP server only a filtered environment (HOME, PATH,
//!   LANG, SHELL, TERM and a few CA variables), so the variables hark's
//!   server reads are named in `env_vars`;
//! - `exec` runs with approval `never`, and an MCP tool call without
//!   `default_tools_approval_mode = "approve"` fails;
//! - a call is cut at `tool_timeout_sec` (default 300 s) whatever progress
//!   it reports, so it is set above hark's bounded wait: the model then
//!   reads hark's own not-answered text, not Codex's timeout;
//! - `required = true` makes `exec` fail when the server cannot start.

use std::path::Path;
use std::time::Duration;

use super::SERVER;

/// The variables hark's MCP server reads, which Codex would otherwise not
/// pass it (`XDG_RUNTIME_DIR` holds the default socket).
const ENV_VARS: &[&str] = &[
    crate::env::SOCKET,
    crate::env::ASK_SOCK,
    crate::env::SESSION_ID,
    crate::env::ASK_TIMEOUT,
    crate::env::PROGRESS_INTERVAL_MS,
    crate::env::DATA_DIR,
    crate::env::CONFIG,
    crate::env::LOG,
    "XDG_RUNTIME_DIR",
];

/// How far above the bounded wait Codex's cut is put.
const CUT_MARGIN: Duration = Duration::from_secs(60);

/// The `key=value` overrides (each for a `-c`) that attach `hark`'s
/// `operator` server to `codex exec`, for a bounded wait of `ask_timeout`.
pub fn overrides(hark: &Path, ask_timeout: Duration) -> Vec<String> {
    let key = |name: &str| format!("mcp_servers.{SERVER}.{name}");
    let text = |value: &str| toml::Value::String(value.to_owned()).to_string();
    let list = |values: &[&str]| {
        toml::Value::Array(
            values
                .iter()
                .map(|v| toml::Value::String((*v).to_owned()))
                .collect(),
        )
        .to_string()
    };
    let cut = (ask_timeout + CUT_MARGIN).as_secs();
    vec![
        format!("{}={}", key("command"), text(&hark.display().to_string())),
        format!("{}={}", key("args"), list(&["mcp-operator-ask"])),
        format!("{}={}", key("env_vars"), list(ENV_VARS)),
        format!("{}={}", key("default_tools_approval_mode"), text("approve")),
        format!("{}=true", key("required")),
        format!("{}={cut}", key("tool_timeout_sec")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overrides_are_toml_values_and_cut_above_the_wait() {
        let found = overrides(Path::new("/opt/my \"hark\"/hark"), Duration::from_secs(300));
        let parsed: Vec<(String, toml::Value)> = found
            .iter()
            .map(|o| {
                let (key, value) = o.split_once('=').unwrap();
                let table: toml::Table = format!("v = {value}").parse().unwrap();
                (key.to_owned(), table["v"].clone())
            })
            .collect();
        assert_eq!(parsed[0].0, "mcp_servers.operator.command");
        assert_eq!(parsed[0].1.as_str(), Some("/opt/my \"hark\"/hark"));
        assert_eq!(parsed[2].1.as_array().unwrap().len(), ENV_VARS.len());
        assert_eq!(parsed[3].1.as_str(), Some("approve"));
        assert_eq!(parsed[5].1.as_integer(), Some(360));
    }
}
