//! One turn of OpenCode: its `opencode run --format json` events shown as
//! progress, and its last text as the result, as `stream-json` is for
//! Claude Code ([`super::agent`]). The events, as OpenCode 1.18.33 prints
//! them (docs/src/agents/opencode.md), each with `type`, `timestamp` and
//! `sessionID`: `step_start`, `tool_use {part: {tool, state: {status,
//! input, output | error}}}` once the call has finished, `text {part:
//! {text}}`, `step_finish {part: {reason, tokens, cost}}` and `error
//! {error: {name, data: {message}}}`. No event closes the turn: the last
//! `step_finish` with reason `stop` does.

use serde_json::Value;

use hark_core::agent::opencode::ASK_TOOL;

use super::agent::Turn;

/// Shows one `--format json` event: the turn's last text (its result) on
/// stdout once the turn stops, progress on stderr (raw lines pass through
/// to stdout).
pub fn show(line: &str, turn: &mut Turn) {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        turn.release();
        println!("{line}");
        return;
    };
    if let Some(session) = event["sessionID"].as_str() {
        turn.session = Some(session.to_owned());
    }
    let part = &event["part"];
    match event["type"].as_str() {
        Some("text") => {
            let text = part["text"].as_str().unwrap_or_default();
            turn.hold(text);
            turn.result = Some(text.to_owned());
        }
        Some("tool_use") => {
            turn.release();
            tool_use(part);
        }
        Some("step_finish") => {
            turn.cost_usd += part["cost"].as_f64().unwrap_or(0.0);
            if part["reason"] == "stop" {
                turn.print_held();
                let tokens = |k: &str| part["tokens"][k].as_u64().unwrap_or(0);
                eprintln!(
                    "hark: the agent finished ({} tokens in, {} out)",
                    tokens("input"),
                    tokens("output")
                );
            }
        }
        Some("error") => {
            turn.release();
            let error = &event["error"];
            let message = error["data"]["message"]
                .as_str()
                .or(error["name"].as_str())
                .unwrap_or("an error");
            eprintln!("hark: the agent failed: {message}");
        }
        _ => {}
    }
}

/// A finished tool call: the operator's questions, or what it ran, and
/// what failed.
fn tool_use(part: &Value) {
    let state = &part["state"];
    let tool = part["tool"].as_str().unwrap_or("a tool");
    if tool == ASK_TOOL {
        for q in state["input"]["questions"].as_array().into_iter().flatten() {
            eprintln!(
                "  ? asks the operator: [{}] {}",
                q["header"].as_str().unwrap_or_default(),
                q["question"].as_str().unwrap_or_default()
            );
        }
    } else if let Some(command) = state["input"]["command"].as_str() {
        eprintln!("  → $ {command}");
    } else {
        eprintln!("  → {tool}");
    }
    if state["status"] == "error" {
        let why = state["error"].as_str().unwrap_or("failed");
        eprintln!("  ! {tool}: {}", why.lines().next().unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_on_every_line_and_the_last_text_is_the_result() {
        let mut turn = Turn::default();
        for line in [
            r#"{"type":"step_start","sessionID":"ses_1","part":{}}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"text":"Looking."}}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"operator_ask","state":{"status":"error","input":{},"error":"operator did not answer"}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","cost":0.5,"tokens":{}}}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"text":"Using SQLite."}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","cost":0.25,"tokens":{"input":10,"output":5}}}"#,
        ] {
            show(line, &mut turn);
        }
        assert_eq!(turn.session.as_deref(), Some("ses_1"));
        assert_eq!(turn.result.as_deref(), Some("Using SQLite."));
        assert_eq!(turn.cost_usd, 0.75);
    }
}
