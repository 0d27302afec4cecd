//! The `PreToolUse` hook a run hark dispatches gets for `mcp__operator__ask`
//! (Claude Code 2.1.332; see `docs/agents/claude-code.md`): the hook files
//! the question and, when nobody answers within the bounded wait, answers
//! `defer`, which ends the agent saved, to be resumed with the answer.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::ASK_TOOL;
use super::sandbox::object_at;

/// The hook's command line: `exec`, so that the hook process is the
/// agent's own child (the daemon sees who asks), with the path quoted for
/// the shell Claude Code runs it with.
pub fn hook_command(hark: &Path) -> String {
    let quoted = hark.display().to_string().replace('\'', r"'\''");
    format!("exec '{quoted}' hook pre-tool-use")
}

/// `settings` (the user's, or `{}`) with the park hook added to its
/// `hooks.PreToolUse` (theirs are kept). Its timeout is above the bounded
/// wait, so the agent never cuts the hook before it decides. A read-only
/// run's hook (`approvals`) sees every tool call, so that its write
/// approvals park too; otherwise only the ask.
pub fn with_park_hook(
    settings: Value,
    command: &str,
    ask_timeout: Duration,
    approvals: bool,
) -> Value {
    let mut settings = match settings {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let hooks = object_at(&mut settings, "hooks");
    let (matcher, command) = if approvals {
        ("*", format!("{command} --approvals"))
    } else {
        (ASK_TOOL, command.to_owned())
    };
    let entry = json!({
        "matcher": matcher,
        "hooks": [{
            "type": "command",
            "command": command,
            "timeout": (ask_timeout + Duration::from_secs(60)).as_secs(),
        }],
    });
    match hooks.entry("PreToolUse").or_insert_with(|| json!([])) {
        Value::Array(entries) => entries.push(entry),
        other => *other = json!([entry]),
    }
    Value::Object(settings)
}
