//! The fake `claude -p` (tests/fake-claude) against Claude Code's
//! `PreToolUse` hooks as measured on the real CLI
//! (docs/src/agents/claude-code.md): a hook's `defer` ends the run with the
//! deferred tool use and saves the session, `--resume` without a prompt
//! fires the hook again for the same tool use, `allow` lets the operator's
//! answer through, `deny` and exit status 2 refuse, a hook past its timeout
//! is ignored.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use serde_json::{Value, json};

/// Logs its stdin, one line a call, and prints the decision in `decision`.
const HOOK: &str = r#"#!/bin/sh
dir=$(dirname "$0")
cat >> "$dir/hook-input.log"
echo >> "$dir/hook-input.log"
decision=$(cat "$dir/decision")
case "$decision" in
  exit2) echo "blocked by the hook" >&2; exit 2 ;;
  hang) exec sleep 60 ;;
  *) printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"the hook said %s"}}' "$decision" "$decision" ;;
esac
"#;

/// A sandbox with the hook script, answering `decision`, and settings that
/// run it before every `mcp__operator__ask` with a timeout of `timeout` s.
fn hooked(sandbox: &Sandbox, decision: &str, timeout: u64) {
    let hook = sandbox.path("hook.sh");
    std::fs::write(&hook, HOOK).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    decide(sandbox, decision);
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__operator__ask",
        "hooks": [{"type": "command", "command": hook, "timeout": timeout}]}]}});
    std::fs::write(sandbox.path("settings.json"), settings.to_string()).unwrap();
}

fn decide(sandbox: &Sandbox, decision: &str) {
    std::fs::write(sandbox.path("decision"), decision).unwrap();
}

/// The hook's inputs so far.
fn hook_inputs(sandbox: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sandbox.path("hook-input.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `fake-claude -p ARGS --output-format stream-json --verbose --settings
/// settings.json` in `sandbox`, with the operator bridge of `sandbox`'s
/// daemon in its MCP config.
fn fake(sandbox: &Sandbox, args: &[&str]) -> Output {
    let config = json!({"mcpServers": {"operator": {"command": sandbox.bin("hark"),
        "args": ["mcp-operator-ask"]}}});
    let config_path = sandbox.path("mcp.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    sandbox
        .command(fake_claude())
        .current_dir(sandbox.root())
        .env("HARK_ASK_SOCK", sandbox.socket())
        .arg("-p")
        .args(args)
        .args(["--output-format", "stream-json", "--verbose"])
        .arg("--settings")
        .arg(sandbox.path("settings.json"))
        .arg("--mcp-config")
        .arg(config_path)
        .args(["--allowedTools", "mcp__operator__ask"])
        .output()
        .unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The final `result` event, which must be the last.
fn result(out: &Output) -> Value {
    let last = events(out).pop().expect("some output");
    assert_eq!(last["type"], "result", "{}", stdout(out));
    last
}

/// The tool results the model was given, by tool use id.
fn tool_results(out: &Output) -> Vec<Value> {
    events(out)
        .into_iter()
        .filter(|e| e["type"] == "user")
        .map(|e| e["message"]["content"][0].clone())
        .collect()
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        stdout(out)
    );
}

fn script(lines: &[&str]) -> String {
    lines.join("\n")
}

#[test]
fn a_deferred_ask_ends_the_run_with_the_tool_use_and_saves_the_session() {
    let sandbox = sandbox();
    hooked(&sandbox, "defer", 10);
    let out = fake(
        &sandbox,
        &[&script(&["SAY before", &ask_line(), "SAY after"])],
    );
    succeeded(&out);

    let result = result(&out);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["stop_reason"], "tool_deferred");
    assert_eq!(result["terminal_reason"], "tool_deferred");
    let deferred = &result["deferred_tool_use"];
    assert_eq!(deferred["name"], "mcp__operator__ask");
    assert_eq!(deferred["input"], questions(&[db()]));
    let use_id = deferred["id"].as_str().unwrap();
    assert!(use_id.starts_with("toolu_"), "{use_id}");
    assert!(tool_results(&out).is_empty(), "the ask did not run");
    assert!(!stdout(&out).contains("after"), "the script stopped there");

    let session_id = result["session_id"].as_str().unwrap();
    let file = sandbox.path(format!("home/.claude/projects/fake/{session_id}.json"));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["deferred"], *deferred);

    let inputs = hook_inputs(&sandbox);
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let input = &inputs[0];
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["session_id"], session_id);
    assert_eq!(input["tool_name"], "mcp__operator__ask");
    assert_eq!(input["tool_input"], questions(&[db()]));
    assert_eq!(input["tool_use_id"], use_id);
    assert_eq!(input["mcp_server"]["name"], "operator");
    assert_eq!(input["permission_mode"], "default");
    assert_eq!(input["transcript_path"], file.to_str().unwrap());
    assert_eq!(
        Path::new(input["cwd"].as_str().unwrap()),
        sandbox.root().canonicalize().unwrap()
    );
}

#[test]
fn a_resumed_session_fires_the_hook_again_and_allow_lets_the_operator_answer() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    hooked(sandbox, "defer", 10);
    let first = fake(sandbox, &[&script(&[&ask_line(), "SAY after"])]);
    succeeded(&first);
    let deferred = result(&first)["deferred_tool_use"].clone();
    let session_id = result(&first)["session_id"].as_str().unwrap().to_owned();
    assert!(inbox(sandbox).is_empty(), "nobody was asked yet");

    decide(sandbox, "allow");
    let second = fake(sandbox, &["--resume", &session_id]);
    succeeded(&second);

    let inputs = hook_inputs(sandbox);
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert_eq!(inputs[1]["tool_use_id"], deferred["id"]);
    assert_eq!(inputs[1]["session_id"], session_id.as_str());
    assert_eq!(inputs[1]["tool_input"], deferred["input"]);

    let results = tool_results(&second);
    assert_eq!(results.len(), 1, "{}", stdout(&second));
    assert_eq!(results[0]["tool_use_id"], deferred["id"]);
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(
        results[0]["content"],
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    let end = result(&second);
    assert_eq!(end["session_id"], session_id.as_str());
    assert_eq!(end["terminal_reason"], "completed");
    assert_eq!(end["result"], "after", "the script went on to its end");
    assert_eq!(inbox(sandbox).len(), 1, "the operator was asked once");
}

#[test]
fn deny_and_exit_status_2_give_the_model_a_tool_error() {
    for (decision, reason) in [
        (
            "deny",
            "PreToolUse:mcp__operator__ask hook error: the hook said deny",
        ),
        (
            "exit2",
            "hook error: [", // then the command, then its stderr
        ),
    ] {
        let sandbox = sandbox();
        hooked(&sandbox, decision, 10);
        let out = fake(&sandbox, &[&script(&[&ask_line(), "SAY after"])]);
        succeeded(&out);
        let results = tool_results(&out);
        assert_eq!(results.len(), 1, "{}", stdout(&out));
        assert_eq!(results[0]["is_error"], true);
        let text = results[0]["content"].as_str().unwrap();
        assert!(text.contains(reason), "{decision}: {text}");
        if decision == "exit2" {
            assert!(text.ends_with("]: blocked by the hook\n"), "{text}");
        }
        assert_eq!(result(&out)["terminal_reason"], "completed");
        assert_eq!(result(&out)["result"], "after");
    }
}

#[test]
fn with_two_calls_in_one_message_the_other_runs_and_the_ask_is_deferred() {
    let sandbox = sandbox();
    hooked(&sandbox, "defer", 10);
    let written = sandbox.path("written.txt");
    let write = json!({"file_path": written, "content": "beside the ask"});
    let line = format!("BOTH TOOL Write {write} && {}", ask_line());
    let out = fake(&sandbox, &[&line, "--allowedTools", "Write"]);
    succeeded(&out);

    let uses: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "assistant")
        .map(|e| e["message"]["content"][0].clone())
        .collect();
    assert_eq!(uses.len(), 2);
    assert_eq!(
        (uses[0]["name"].as_str(), uses[1]["name"].as_str()),
        (Some("Write"), Some("mcp__operator__ask"))
    );
    let results = tool_results(&out);
    assert_eq!(results.len(), 1, "{}", stdout(&out));
    assert_eq!(results[0]["tool_use_id"], uses[0]["id"]);
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "beside the ask");
    let result = result(&out);
    assert_eq!(result["terminal_reason"], "tool_deferred");
    assert_eq!(result["deferred_tool_use"]["id"], uses[1]["id"]);
    assert_eq!(hook_inputs(&sandbox).len(), 1, "only the ask is hooked");
}

#[test]
fn a_hook_past_its_timeout_is_ignored_with_a_warning() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    hooked(sandbox, "hang", 1);
    let out = fake(sandbox, &[&script(&[&ask_line()])]);
    succeeded(&out);
    let warning = events(&out)
        .into_iter()
        .find(|e| e["subtype"] == "informational")
        .expect("a warning");
    assert_eq!(warning["hook_no_verdict"]["timed_out"], true);
    // The normal flow: the ask runs and is answered.
    let results = tool_results(&out);
    assert_eq!(results.len(), 1, "{}", stdout(&out));
    assert_eq!(
        results[0]["tool_use_id"],
        warning["hook_no_verdict"]["tool_use_id"]
    );
    assert_eq!(
        results[0]["content"],
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    assert_eq!(result(&out)["terminal_reason"], "completed");
}

#[test]
fn resuming_a_session_that_does_not_exist_fails() {
    let sandbox = sandbox();
    hooked(&sandbox, "allow", 10);
    let out = fake(&sandbox, &["--resume", "fake-session-0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("No conversation found with session ID: fake-session-0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = result(&out);
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    assert!(hook_inputs(&sandbox).is_empty());
}
