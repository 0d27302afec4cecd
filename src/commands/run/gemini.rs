//! One turn of Gemini CLI: its `gemini -p --output-format stream-json`
//! events shown as progress, and its last text as the result, as
//! `stream-json` is for Claude Code ([`super::agent`]). The events, as
//! Gemini CLI 0.61.0 prints them (docs/src/agents/gemini.md), one JSON
//! object a line: `init {session_id}`, `message {role, content, delta}`
//! (the assistant's text comes in pieces), `tool_use {tool_name, tool_id,
//! parameters}`, `tool_result {tool_id, status, output, error: {message}}`
//! and last `result {status, stats: {input_tokens, output_tokens,
//! duration_ms}}`, which carries no text: the text since the last tool
//! call is the result.

use serde_json::Value;

use hark_core::agent::gemini::ASK_TOOL;

use super::agent::Turn;

/// The exit status of `gemini -p` in a folder it does not trust.
const UNTRUSTED: i32 = 55;

/// Shows one `stream-json` event: the turn's last text (its result) on
/// stdout once the turn ends, progress on stderr (raw lines pass through
/// to stdout).
pub fn show(line: &str, turn: &mut Turn) {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        turn.release();
        println!("{line}");
        return;
    };
    match event["type"].as_str() {
        Some("init") => {
            turn.session = event["session_id"].as_str().map(str::to_owned);
        }
        Some("message") if event["role"] == "assistant" => {
            let piece = event["content"].as_str().unwrap_or_default();
            let text = match event["delta"] == true {
                true => turn.extend_held(piece),
                false => {
                    turn.hold(piece);
                    piece.to_owned()
                }
            };
            turn.result = Some(text);
        }
        Some("tool_use") => {
            turn.release();
            turn.result = None;
            tool_use(&event);
        }
        Some("tool_result") if event["status"] == "error" => {
            let tool = event["tool_id"].as_str().unwrap_or("a tool");
            let tool = tool.split_once("__").map_or(tool, |(name, _)| name);
            let why = event["error"]["message"].as_str().unwrap_or("failed");
            eprintln!("  ! {tool}: {}", why.lines().next().unwrap_or_default());
        }
        Some("result") => {
            let stats = &event["stats"];
            let tokens = |k: &str| stats[k].as_u64().unwrap_or(0);
            let seconds = tokens("duration_ms") as f64 / 1000.0;
            if event["status"] == "success" {
                turn.print_held();
                eprintln!(
                    "hark: the agent finished in {seconds:.1} s ({} tokens in, {} out)",
                    tokens("input_tokens"),
                    tokens("output_tokens")
                );
            } else {
                turn.release();
                let why = event["error"]["message"].as_str().unwrap_or("an error");
                eprintln!("hark: the agent failed: {why}");
            }
        }
        _ => {}
    }
}

/// A tool call: the operator's questions, or what it runs.
fn tool_use(event: &Value) {
    let tool = event["tool_name"].as_str().unwrap_or("a tool");
    let parameters = &event["parameters"];
    if tool == ASK_TOOL {
        for q in parameters["questions"].as_array().into_iter().flatten() {
            eprintln!(
                "  ? asks the operator: [{}] {}",
                q["header"].as_str().unwrap_or_default(),
                q["question"].as_str().unwrap_or_default()
            );
        }
    } else if let Some(command) = parameters["command"].as_str() {
        eprintln!("  → $ {command}");
    } else {
        eprintln!("  → {tool}");
    }
}

/// Says why a turn ended with the untrusted folder's status: a wrapped
/// command line without `--skip-trust` (hark's own has it).
pub fn explain_untrusted(turn: &Turn) {
    if turn.status == UNTRUSTED {
        eprintln!(
            "hark: Gemini CLI does not trust this folder (exit status 55)\nhint: add --skip-trust to the command line, or trust the folder in Gemini CLI"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_on_init_and_the_text_after_the_last_tool_is_the_result() {
        let mut turn = Turn::default();
        for line in [
            r#"{"type":"init","session_id":"u-1","model":"auto"}"#,
            r#"{"type":"message","role":"user","content":"go"}"#,
            r#"{"type":"message","role":"assistant","content":"Let me ","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"ask.","delta":true}"#,
            r#"{"type":"tool_use","tool_name":"mcp_operator_ask","tool_id":"mcp_operator_ask__1","parameters":{}}"#,
            r#"{"type":"tool_result","tool_id":"mcp_operator_ask__1","status":"error","error":{"message":"operator did not answer"}}"#,
            r#"{"type":"message","role":"assistant","content":"Using ","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"SQLite.","delta":true}"#,
            r#"{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":5}}"#,
        ] {
            show(line, &mut turn);
        }
        assert_eq!(turn.session.as_deref(), Some("u-1"));
        assert_eq!(turn.result.as_deref(), Some("Using SQLite."));
    }
}
