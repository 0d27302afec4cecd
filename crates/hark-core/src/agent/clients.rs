//! What `hark mcp-config --for CLIENT` prints for the MCP clients besides
//! Claude Code ([`super::mcp_config`]) and Codex ([`super::codex`]): each
//! one's shape for hark's `operator` server, the file it goes in, and what
//! it needs to ask from a run nobody watches. These are taken from each
//! client's documentation; OpenCode's was checked against OpenCode
//! 1.18.33 (docs/src/agents/opencode.md) and Gemini CLI's against Gemini CLI
//! 0.61.0 (docs/src/agents/gemini.md), the others were not run here
//! ([`Client::tested`]; docs/src/guides/by-hand.md's table says how each
//! is tested).

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::{CUT_MARGIN, SERVER};

/// An MCP client hark prints a config for, past Claude Code and Codex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Cursor,
    Gemini,
    Goose,
    Opencode,
    Vscode,
}

impl Client {
    /// Whether hark's tests run the real client on the config printed for
    /// it (`tests/it/opencode/real.rs`, `tests/it/gemini.rs`).
    pub fn tested(self) -> bool {
        matches!(self, Client::Gemini | Client::Opencode)
    }
}

/// A client's config for hark's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// What to merge into the file.
    pub text: String,
    /// Where it goes.
    pub file: &'static str,
    /// What the client needs, or does not offer, in a run nobody watches.
    pub caveat: &'static str,
}

/// The server's arguments.
const ARGS: [&str; 1] = ["mcp-operator-ask"];

/// `client`'s config naming `hark`, for a bounded wait of `ask_timeout`.
pub fn config(client: Client, hark: &Path, ask_timeout: Duration) -> ClientConfig {
    let command = hark.display().to_string();
    let cut = ask_timeout + CUT_MARGIN;
    let pretty = |value: serde_json::Value| {
        serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string())
    };
    match client {
        Client::Cursor => ClientConfig {
            text: pretty(
                json!({"mcpServers": {SERVER: {"type": "stdio", "command": command, "args": ARGS}}}),
            ),
            file: ".cursor/mcp.json in the project, or ~/.cursor/mcp.json",
            caveat: "the Cursor CLI (cursor-agent -p) starts an MCP server only once it is approved: \
                     approve it once, or pass --approve-mcps; a call longer than Cursor's own limit is cut by Cursor",
        },
        Client::Gemini => ClientConfig {
            text: pretty(json!({"mcpServers": {SERVER: {
                "command": command,
                "args": ARGS,
                "timeout": u64::try_from(cut.as_millis()).unwrap_or(u64::MAX),
                "trust": true,
            }}})),
            file: "~/.gemini/settings.json, or .gemini/settings.json in the project",
            caveat: "trust skips Gemini CLI's confirmation of each call, which gemini -p cannot show; \
                     timeout (milliseconds, 10 minutes by default) is set above hark's wait, \
                     as it is a hard cut that hark's progress does not extend (measured on Gemini CLI 0.61.0)",
        },
        Client::Goose => ClientConfig {
            // JSON strings are YAML's double-quoted scalars.
            text: format!(
                "extensions:\n  {SERVER}:\n    enabled: true\n    type: stdio\n    name: {SERVER}\n    cmd: {}\n    args:\n    - {}\n    timeout: {}\n",
                json!(command),
                json!(ARGS[0]),
                cut.as_secs()
            ),
            file: "~/.config/goose/config.yaml (its extensions: entry)",
            caveat: "timeout (seconds, 300 by default) is set above hark's wait; goose run -t \"…\" is its headless mode",
        },
        Client::Opencode => ClientConfig {
            text: pretty(json!({
                "$schema": "https://opencode.ai/config.json",
                "mcp": {SERVER: {"type": "local", "command": [command, ARGS[0]], "enabled": true}},
            })),
            file: "opencode.json in the project, or ~/.config/opencode/opencode.json",
            caveat: "a timeout (milliseconds) there bounds each call, 60 s when unset, but hark's progress \
                     notifications restart it, so hark's bounded wait decides (measured on OpenCode 1.18.33); \
                     a project that sets \"permission\": {\"operator_ask\": \"ask\"} has it refused in opencode run: \
                     allow it there or with OPENCODE_PERMISSION='{\"operator_ask\":\"allow\"}'",
        },
        Client::Vscode => ClientConfig {
            text: pretty(
                json!({"servers": {SERVER: {"type": "stdio", "command": command, "args": ARGS}}}),
            ),
            file: ".vscode/mcp.json in the workspace",
            caveat: "VS Code's agent mode has its own chat with a person in it; hark's tool serves the agents it starts \
                     and the questions that should reach the desktop app",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_names_this_hark_and_cuts_above_the_wait() {
        let hark = Path::new("/opt/my \"hark\"/hark");
        let wait = Duration::from_secs(120);
        for client in [
            Client::Cursor,
            Client::Gemini,
            Client::Opencode,
            Client::Vscode,
        ] {
            let found = config(client, hark, wait);
            let value: serde_json::Value = serde_json::from_str(&found.text).unwrap();
            let text = value.to_string();
            assert!(
                text.contains(r#"/opt/my \"hark\"/hark"#),
                "{client:?}: {text}"
            );
            assert!(text.contains("mcp-operator-ask"), "{client:?}: {text}");
        }
        let gemini: serde_json::Value =
            serde_json::from_str(&config(Client::Gemini, hark, wait).text).unwrap();
        assert_eq!(gemini["mcpServers"]["operator"]["timeout"], 180_000);
        assert_eq!(gemini["mcpServers"]["operator"]["trust"], true);
        let goose = config(Client::Goose, hark, wait).text;
        assert!(
            goose.contains(r#"    cmd: "/opt/my \"hark\"/hark""#),
            "{goose}"
        );
        assert!(goose.ends_with("    timeout: 180\n"), "{goose}");
        let tested = [
            Client::Cursor,
            Client::Gemini,
            Client::Goose,
            Client::Opencode,
            Client::Vscode,
        ]
        .into_iter()
        .filter(|c| c.tested())
        .collect::<Vec<_>>();
        assert_eq!(tested, [Client::Gemini, Client::Opencode]);
    }
}
