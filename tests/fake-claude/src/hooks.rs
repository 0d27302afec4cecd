//! `PreToolUse` hooks from `--settings`, run as Claude Code runs them: the
//! command through `sh -c` with the hook input on stdin, killed at its
//! timeout, its exit status and stdout read as a decision.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::args::inline_or_file;

/// A hook's timeout when its entry names none (Claude Code's documented
/// default for command hooks).
const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// Why `--settings` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read settings file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid settings {settings}")]
    Parse {
        settings: String,
        #[source]
        source: serde_json::Error,
    },
}

/// One `{"type":"command"}` hook of a `PreToolUse` entry.
#[derive(Debug, Clone)]
pub struct Hook {
    pub command: String,
    pub timeout: Duration,
}

/// A `PreToolUse` entry: the tools its `matcher` names, and its hooks.
#[derive(Debug, Clone)]
struct Entry {
    /// `None` matches every tool (no matcher, `""` or `"*"`); else tool names,
    /// the matcher's `|` alternatives.
    names: Option<Vec<String>>,
    hooks: Vec<Hook>,
}

/// The `PreToolUse` hooks of every `--settings` given.
#[derive(Debug, Clone, Default)]
pub struct PreToolUse {
    entries: Vec<Entry>,
}

impl PreToolUse {
    /// Reads each `--settings` value: inline JSON, or the path of a JSON file.
    pub fn load(settings: &[String]) -> Result<Self, SettingsError> {
        let mut entries = Vec::new();
        for setting in settings {
            let text = inline_or_file(setting).map_err(|source| SettingsError::Read {
                path: setting.clone(),
                source,
            })?;
            let value: Value =
                serde_json::from_str(&text).map_err(|source| SettingsError::Parse {
                    settings: setting.clone(),
                    source,
                })?;
            for entry in value["hooks"]["PreToolUse"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let names = match entry["matcher"].as_str().unwrap_or("") {
                    "" | "*" => None,
                    matcher => Some(matcher.split('|').map(str::to_owned).collect()),
                };
                let hooks = entry["hooks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|h| h["type"] == "command")
                    .filter_map(|h| {
                        Some(Hook {
                            command: h["command"].as_str()?.to_owned(),
                            timeout: Duration::from_secs(
                                h["timeout"].as_u64().unwrap_or(DEFAULT_TIMEOUT_SECS),
                            ),
                        })
                    })
                    .collect();
                entries.push(Entry { names, hooks });
            }
        }
        Ok(Self { entries })
    }

    /// The hooks whose matcher names `tool`, in the order configured.
    pub fn matching(&self, tool: &str) -> Vec<Hook> {
        self.entries
            .iter()
            .filter(|e| e.names.as_ref().is_none_or(|n| n.iter().any(|n| n == tool)))
            .flat_map(|e| e.hooks.clone())
            .collect()
    }
}

/// What the hooks decided about one tool use. Ordered: when several hooks
/// match, the most restrictive decision wins.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    /// No decision (no output, a non-blocking error, a timeout): the normal
    /// permission flow.
    Normal,
    /// `allow`: the tool runs without the permission checks.
    Allow,
    /// `ask`: the permission flow, which in `-p` mode refuses with the
    /// reason unless a `--permission-prompt-tool` says yes.
    Ask(String),
    /// `defer`: the run stops here, to be resumed.
    Defer,
    /// `deny`, or exit status 2: the tool result the model gets.
    Deny(String),
}

/// What one hook run came to.
pub enum Outcome {
    Decided(Decision),
    /// It outlived its timeout and was killed.
    TimedOut,
}

/// Runs `hook` with `input` on its stdin, as Claude Code does.
pub async fn run(hook: &Hook, tool: &str, input: &Value) -> Outcome {
    let spawned = shell(&hook.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = spawned else {
        return Outcome::Decided(Decision::Normal);
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.to_string().as_bytes()).await;
    }
    let Ok(output) = tokio::time::timeout(hook.timeout, child.wait_with_output()).await else {
        return Outcome::TimedOut;
    };
    let Ok(output) = output else {
        return Outcome::Decided(Decision::Normal);
    };
    let decision = match output.status.code() {
        Some(0) => decided(tool, &output.stdout),
        Some(2) => Decision::Deny(format!(
            "PreToolUse:{tool} hook error: [{}]: {}",
            hook.command,
            String::from_utf8_lossy(&output.stderr)
        )),
        _ => Decision::Normal,
    };
    Outcome::Decided(decision)
}

/// The decision in a hook's stdout (`hookSpecificOutput`), if any.
fn decided(tool: &str, stdout: &[u8]) -> Decision {
    let Ok(output) = serde_json::from_slice::<Value>(stdout) else {
        return Decision::Normal;
    };
    let specific = &output["hookSpecificOutput"];
    let reason = specific["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    match specific["permissionDecision"].as_str() {
        Some("allow") => Decision::Allow,
        Some("deny") => Decision::Deny(format!("PreToolUse:{tool} hook error: {reason}")),
        Some("ask") => Decision::Ask(reason),
        Some("defer") => Decision::Defer,
        _ => Decision::Normal,
    }
}

/// The warning Claude Code prints when a hook times out.
pub fn timed_out_event(session_id: &str, use_id: &str) -> Value {
    json!({"type": "system", "subtype": "informational",
        "content": "A hook didn't answer in time, so it didn't check this action.",
        "level": "warning", "tag": "hook_no_verdict",
        "hook_no_verdict": {"hook_event": "PreToolUse", "tool_use_id": use_id, "timed_out": true},
        "session_id": session_id})
}

/// The hook's command as Claude Code runs it: `sh -c COMMAND`.
#[cfg(unix)]
fn shell(command: &str) -> tokio::process::Command {
    let mut shell = tokio::process::Command::new("sh");
    shell.arg("-c").arg(command);
    shell
}

/// Windows: Claude Code runs hooks in Git Bash, which Wine does not have.
/// The one POSIX form hark writes, `exec 'PROGRAM' ARGS…` (its park hook),
/// is run directly; anything else through `cmd /C`.
#[cfg(windows)]
fn shell(command: &str) -> tokio::process::Command {
    let exec = command.strip_prefix("exec '").and_then(|rest| {
        let (program, args) = rest.split_once("' ")?;
        Some((program.replace(r"'\''", "'"), args))
    });
    match exec {
        Some((program, args)) => {
            let mut direct = tokio::process::Command::new(program);
            direct.args(args.split_whitespace());
            direct
        }
        None => {
            let mut cmd = tokio::process::Command::new("cmd");
            cmd.arg("/C").raw_arg(command);
            cmd
        }
    }
}
