//! `hark hook pre-tool-use`: Claude Code's `PreToolUse` hook for
//! `mcp__operator__ask` in the runs hark dispatches, which lets a question
//! park instead of time out (see `docs/src/agents/claude-code.md`).
//!
//! The hook files the call with the operator, keyed by its tool use id, and
//! waits the bounded wait. Answered (or skipped, or settled any other way)
//! in time: `allow`, and the MCP call that follows, carrying the same id in
//! its `_meta`, gets the stored outcome at once. Not answered: `defer`, and
//! the agent exits, saved, to be resumed (`--resume`) when the operator
//! settles the item; the resumed agent's hook gets `allow` at once. When the
//! hook cannot file the call (no operator, a malformed call) it says
//! nothing, and the call goes its ordinary way: the MCP tool reports it.

use hark_core::bridge::client::{Call, ClientError, Started};
use hark_core::bridge::wire::ClientFrame;
use hark_core::model::item::{Outcome, SubAgent};
use hark_core::registry::Waited;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::McpSettings;

/// The part of the hook's input hark reads (Claude Code sends more).
#[derive(Debug, Deserialize)]
pub struct HookInput {
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    pub tool_use_id: String,
    /// Set for a call made inside a sub-agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The sub-agent's type (`general-purpose`, …), with `agent_id`.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// The agent's saved session: resuming needs it.
    #[serde(default)]
    pub transcript_path: Option<std::path::PathBuf>,
}

/// What the hook prints, if anything: `{"hookSpecificOutput":{…}}`. With
/// `approvals` (a read-only run, whose every tool call the hook sees), a
/// call other than an ask goes to the write-mode gate as an approval that
/// parks: read-only or granted it is allowed at once; else the operator's
/// verdict allows or denies it, and nobody deciding in time defers it.
pub async fn pre_tool_use(
    settings: &McpSettings,
    input: &HookInput,
    approvals: bool,
) -> Option<Value> {
    if input.tool_use_id.trim().is_empty() {
        return None;
    }
    let mut caller = crate::base_caller(settings);
    caller.tool_use_id = Some(input.tool_use_id.clone());
    // A sub-agent's call keeps the bounded wait: Claude Code cannot resume
    // a sub-agent's deferred call (measured, `docs/src/agents/claude-code.md`).
    // Its item is filed under the sub-agent; nothing is printed, and the
    // call goes its ordinary way.
    if let Some(id) = &input.agent_id {
        if input.tool_name == hark_core::agent::ASK_TOOL {
            let frame = ClientFrame::SubAgent {
                caller,
                sub_agent: SubAgent {
                    id: id.clone(),
                    kind: input
                        .agent_type
                        .clone()
                        .unwrap_or_else(|| "sub-agent".to_owned()),
                },
            };
            if let Err(e) = hark_core::bridge::client::request(&settings.socket, &frame).await {
                tracing::debug!("the sub-agent was not noted: {e}");
            }
        }
        return None;
    }
    caller.parks = true;
    caller.transcript.clone_from(&input.transcript_path);
    let frame = if input.tool_name == hark_core::agent::ASK_TOOL {
        ClientFrame::Ask {
            caller,
            request: input.tool_input.clone(),
        }
    } else if approvals {
        ClientFrame::Approve {
            caller,
            tool_name: input.tool_name.clone(),
            input: input.tool_input.clone(),
        }
    } else {
        return None;
    };
    let waited = match Call::start_any(&settings.socket, &frame).await {
        Ok(Started::Pending(mut call)) => call.wait().await,
        Ok(Started::Decided { allow: true, .. }) => {
            return Some(decision("allow", "read-only, or covered by a grant"));
        }
        Ok(Started::Decided { allow: false, .. }) => {
            return Some(decision("deny", crate::DENIED));
        }
        Err(e) => Err(e),
    };
    let is_approval = matches!(frame, ClientFrame::Approve { .. });
    match waited {
        Ok(Waited::Settled(Outcome::Denied)) => Some(decision("deny", crate::DENIED)),
        Ok(Waited::Settled(outcome @ (Outcome::Approved { .. } | Outcome::Answered(_)))) => {
            Some(decision("allow", outcome.name()))
        }
        // An approval not given is a denial (silence is never consent); a
        // question's unanswered outcome is the call's own to report.
        Ok(Waited::Settled(other)) if is_approval => Some(decision(
            "deny",
            &format!(
                "{}: {}",
                crate::NOT_APPROVED,
                other.unanswered_message().unwrap_or_default()
            ),
        )),
        Ok(Waited::Settled(other)) => Some(decision("allow", other.name())),
        Ok(Waited::Parked) => Some(decision(
            "defer",
            "parked: nobody has answered yet; the agent is paused until the operator does",
        )),
        Err(ClientError::Refused(refusal)) => {
            tracing::debug!("the operator refused the call: {}", refusal.message);
            None
        }
        Err(e) => {
            tracing::debug!("no operator for the hook: {e}");
            None
        }
    }
}

fn decision(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}
