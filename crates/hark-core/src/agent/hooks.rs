//! The `PreToolUse` hook a run hark dispatches gets for `mcp__operator__ask`
//! (Claude Code 2.1.332; see `docs/src/agents/claude-code.md`): the hook files
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

/// The hooks `hark hooks install` puts in an agent's settings for the
/// sessions someone starts in a terminal. Each: its event, the `hark hook`
/// argument, the agent's timeout for it.
pub type TerminalHooks = &'static [(&'static str, &'static str, Duration)];

/// Claude Code's (`~/.claude/settings.json`): `PermissionRequest` files
/// each permission dialog with the operator and answers it with their
/// verdict; `PostToolUse` withdraws the dialog's item when the terminal
/// allowed the call first (Claude Code leaves the dialog's hook running
/// then).
pub const CLAUDE_TERMINAL_HOOKS: TerminalHooks = &[
    // A day: the operator's answer or the terminal's ends the wait, never
    // this timeout (the hook prints nothing when hark's own bounded wait
    // passes, and the dialog stays the terminal's).
    (
        "PermissionRequest",
        "permission-request",
        Duration::from_secs(24 * 3600),
    ),
    ("PostToolUse", "post-tool-use", Duration::from_secs(10)),
];

/// Codex's (`$CODEX_HOME/hooks.json`, the same shape): `SessionStart`
/// starts hark's bridge to the app-server the terminal UI runs, once per
/// Codex home (`hark codex-bridge`), and returns at once. The bridge, not
/// a hook, carries the prompts: Codex's `PermissionRequest` hook runs
/// before its dialog and holds it, so it could not race the terminal
/// (measured, docs/src/agents/codex-interactive.md).
pub const CODEX_TERMINAL_HOOKS: TerminalHooks =
    &[("SessionStart", "session-start", Duration::from_secs(10))];

/// The command line of hark's hook `event` (`permission-request`,
/// `post-tool-use`), with the path quoted for the shell.
pub fn terminal_hook_command(hark: &Path, event: &str) -> String {
    let quoted = hark.display().to_string().replace('\'', r"'\''");
    format!("'{quoted}' hook {event}")
}

/// Whether a hook entry's command is one of hark's terminal hooks (any
/// hark's).
fn is_terminal_hook(set: TerminalHooks, hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            set.iter()
                .any(|(_, arg, _)| c.ends_with(&format!(" hook {arg}")))
        })
}

/// `settings` with hark's terminal hooks, once each (an earlier hark's are
/// replaced); everything else, the user's own hooks included, kept.
pub fn with_terminal_hooks(set: TerminalHooks, settings: Value, hark: &Path) -> Value {
    let mut map = without(set, settings);
    let hooks = object_at(&mut map, "hooks");
    for (event, arg, timeout) in set {
        let entry = json!({
            "matcher": "*",
            "hooks": [{
                "type": "command",
                "command": terminal_hook_command(hark, arg),
                "timeout": timeout.as_secs(),
            }],
        });
        match hooks.entry(*event).or_insert_with(|| json!([])) {
            Value::Array(entries) => entries.push(entry),
            other => *other = json!([entry]),
        }
    }
    Value::Object(map)
}

/// `settings` without hark's terminal hooks: an entry left with no hook
/// goes, and so do an emptied event and `hooks`.
pub fn without_terminal_hooks(set: TerminalHooks, settings: Value) -> Value {
    Value::Object(without(set, settings))
}

fn without(set: TerminalHooks, settings: Value) -> serde_json::Map<String, Value> {
    let mut map = match settings {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let Some(Value::Object(hooks)) = map.get_mut("hooks") else {
        return map;
    };
    for (event, _, _) in set {
        let Some(Value::Array(entries)) = hooks.get_mut(*event) else {
            continue;
        };
        for entry in entries.iter_mut() {
            if let Some(Value::Array(list)) = entry.get_mut("hooks") {
                list.retain(|hook| !is_terminal_hook(set, hook));
            }
        }
        entries.retain(|entry| {
            entry
                .get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|list| !list.is_empty())
        });
        if entries.is_empty() {
            hooks.remove(*event);
        }
    }
    if hooks.is_empty() {
        map.remove("hooks");
    }
    map
}

/// Whether `settings` has hark's terminal hooks.
pub fn has_terminal_hooks(set: TerminalHooks, settings: &Value) -> bool {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|hooks| hooks.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|entry| entry.get("hooks").and_then(Value::as_array))
        .flatten()
        .any(|hook| is_terminal_hook(set, hook))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_hooks_are_added_once_and_removed_leaving_the_users_own() {
        let theirs = json!({
            "model": "opus",
            "hooks": {
                "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "notify-me"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
            },
        });
        let hark = Path::new("/opt/it's/hark");
        assert_eq!(
            terminal_hook_command(hark, "post-tool-use"),
            r"'/opt/it'\''s/hark' hook post-tool-use"
        );
        let claude = CLAUDE_TERMINAL_HOOKS;
        let once = with_terminal_hooks(claude, theirs.clone(), hark);
        let twice = with_terminal_hooks(claude, once.clone(), Path::new("/other/hark"));
        assert!(has_terminal_hooks(claude, &once) && has_terminal_hooks(claude, &twice));
        let ours = |s: &Value, event: &str| {
            s["hooks"][event]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    e["hooks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|h| is_terminal_hook(claude, h))
                })
                .count()
        };
        for event in ["PermissionRequest", "PostToolUse"] {
            assert_eq!((ours(&once, event), ours(&twice, event)), (1, 1));
        }
        assert_eq!(
            twice["hooks"]["PermissionRequest"][1]["hooks"][0]["command"],
            "'/other/hark' hook permission-request"
        );
        assert_eq!(
            once["hooks"]["PermissionRequest"][1]["hooks"][0]["timeout"],
            86400
        );
        assert_eq!(without_terminal_hooks(claude, twice), theirs);
        assert_eq!(
            without_terminal_hooks(claude, with_terminal_hooks(claude, json!({}), hark)),
            json!({})
        );
        assert!(!has_terminal_hooks(claude, &theirs));
    }

    #[test]
    fn codexs_session_start_hook_is_its_own_set() {
        let theirs = json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "say hi"}]}]}});
        let hark = Path::new("/opt/hark");
        let codex = with_terminal_hooks(CODEX_TERMINAL_HOOKS, theirs.clone(), hark);
        assert_eq!(
            codex["hooks"]["SessionStart"][1]["hooks"][0]["command"],
            "'/opt/hark' hook session-start"
        );
        assert!(has_terminal_hooks(CODEX_TERMINAL_HOOKS, &codex));
        assert!(!has_terminal_hooks(CLAUDE_TERMINAL_HOOKS, &codex));
        assert_eq!(without_terminal_hooks(CODEX_TERMINAL_HOOKS, codex), theirs);
    }
}
