//! `hark hook permission-request`: Claude Code's `PermissionRequest` hook,
//! for a session someone started in a terminal (`hark hooks install` puts
//! it in their settings). When Claude Code shows its permission dialog
//! ("Do you want to proceed?"), the hook files the call as an approval in
//! the operator's inbox, attributed to the interactive session, and waits:
//! the operator's verdict from any surface (desk, phone, web) is the
//! dialog's answer. The dialog stays live meanwhile: when the person at
//! the terminal answers it first, Claude Code ends the hook, and the item
//! is withdrawn as answered there (see [`permission_request`]'s `answered_here`).
//!
//! Claude Code's own question form (`AskUserQuestion`) raises the same
//! hook: it is put to the operator as the question it is, and their picks
//! fill the form (`updatedInput` with `answers`, measured to close it).
//!
//! Silence is never consent: anything but the operator's allow or deny
//! (nobody answered in time, no daemon, a malformed input) prints nothing,
//! which leaves the dialog to the terminal exactly as without hark.
//! Measured on Claude Code 2.1.332: `docs/src/agents/claude-code-interactive.md`.

use std::future::Future;
use std::path::PathBuf;

use hark_core::bridge::client::{Call, Started};
use hark_core::bridge::wire::ClientFrame;
use hark_core::model::item::Outcome;
use hark_core::registry::Waited;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::McpSettings;

pub use hark_core::model::item::INTERACTIVE;

/// What a denial from hark tells the model.
pub const DENIED_HERE: &str = "The operator denied this from hark. Do not retry it; continue without it, \
or ask the operator what to do instead.";

/// The part of the hook's input hark reads (Claude Code sends more:
/// `permission_suggestions`, `permission_mode`, …).
#[derive(Debug, Deserialize)]
pub struct PermissionInput {
    pub session_id: String,
    #[serde(default)]
    pub cwd: Option<String>,
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
}

/// Files the dialog's call with the operator and waits for the verdict, or
/// for `answered_here` (the terminal answered first: Claude Code is ending
/// the hook), whichever comes first. Returns what the hook prints: the
/// operator's allow or deny, else nothing.
pub async fn permission_request(
    settings: &McpSettings,
    input: &PermissionInput,
    answered_here: impl Future<Output = ()>,
) -> Option<Value> {
    if input.session_id.trim().is_empty() || input.tool_name.trim().is_empty() {
        return None;
    }
    let mut caller = crate::base_caller(settings);
    caller.session_id = Some(input.session_id.as_str().into());
    caller.asker.client = Some(INTERACTIVE.to_owned());
    if let Some(cwd) = &input.cwd {
        caller.asker.cwd = Some(cwd.clone());
    }
    caller.transcript.clone_from(&input.transcript_path);
    caller.dialog = true;
    // Claude Code's own question form is a dialog too: put to the operator
    // as the question it is, and answered with the picks filled in.
    let question = input.tool_name == hark_core::agent::BUILTIN_ASK;
    let frame = if question {
        ClientFrame::Ask {
            caller,
            request: input.tool_input.clone(),
        }
    } else {
        ClientFrame::Approve {
            caller,
            tool_name: input.tool_name.clone(),
            input: input.tool_input.clone(),
        }
    };
    let mut call = match Call::start_any(&settings.socket, &frame).await {
        Ok(Started::Pending(call)) => call,
        // A grant the operator gave for this session covers it.
        Ok(Started::Decided { allow: true, .. }) => return Some(allow(None)),
        Ok(Started::Decided { allow: false, .. }) => return None,
        Err(e) => {
            tracing::debug!("no operator for the permission dialog: {e}");
            return None;
        }
    };
    tokio::select! {
        waited = call.wait() => match waited {
            Ok(Waited::Settled(Outcome::Approved { .. })) => Some(allow(None)),
            Ok(Waited::Settled(Outcome::Answered(resolution))) if question => {
                let mut answered = input.tool_input.clone();
                answered["answers"] = json!(resolution.answers);
                Some(allow(Some(answered)))
            }
            Ok(Waited::Settled(Outcome::Denied)) => Some(deny()),
            Ok(other) => {
                tracing::debug!("the dialog stays the terminal's: {other:?}");
                None
            }
            Err(e) => {
                tracing::debug!("the operator's verdict did not come: {e}");
                None
            }
        },
        () = answered_here => {
            if let Err(e) = call.answered_at_agent().await {
                tracing::debug!("the item was not withdrawn: {e}");
            }
            None
        }
    }
}

/// Allows the call; with `updated`, as that input (a question's, with
/// its `answers`).
fn allow(updated: Option<Value>) -> Value {
    let mut decision = json!({"behavior": "allow"});
    if let Some(updated) = updated {
        decision["updatedInput"] = updated;
    }
    json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": decision,
    }})
}

fn deny() -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": DENIED_HERE},
    }})
}

/// The `PostToolUse` hook: the session ran a call, so a dialog for it still
/// pending here was answered in its terminal; the daemon withdraws it.
/// Nothing to print either way.
pub async fn ran(settings: &McpSettings, input: &PermissionInput) {
    if input.session_id.trim().is_empty() {
        return;
    }
    let frame = ClientFrame::RanAtAgent {
        session_id: input.session_id.as_str().into(),
        tool_name: input.tool_name.clone(),
        input: input.tool_input.clone(),
    };
    if let Err(e) = hark_core::bridge::client::request(&settings.socket, &frame).await {
        tracing::debug!("no operator to tell of the call: {e}");
    }
}
