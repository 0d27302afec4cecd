//! The studio's tools: what each takes, and the `answer` tool's arguments
//! as the reply they stand for.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use hark_core::bridge::wire::WireReply;
use hark_core::model::approval::Scope;
use hark_core::model::ids::ItemId;

pub(super) fn all() -> Vec<Tool> {
    let object = |value: Value| match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("a schema is an object"),
    };
    vec![
        Tool::new(
            "run",
            "Dispatch an agent (hark run: Claude Code or Codex) to do PROMPT, attached to the operator. \
             Its questions are put to you as elicitations when you support them; otherwise this returns \
             {\"status\":\"awaiting_operator\",\"run_id\",\"question_id\",\"questions\"} and you answer with \
             the `answer` tool. Returns the run's result, exit code and cost when it ends.",
            object(
                json!({"type": "object", "required": ["prompt"], "properties": {
                    "prompt": {"type": "string", "description": "What the agent is to do"},
                    "agent": {"type": "string", "description": "The agent's program, e.g. claude or codex (default: the config's agent_command)"},
                    "cwd": {"type": "string", "description": "Its working directory (absolute)"},
                    "verb": {"type": "string", "enum": ["task", "ask", "decide"]},
                    "session": {"type": "string", "description": "The session its questions are filed under"},
                    "read_only": {"type": "boolean", "description": "Every write asks the operator first"},
                    "timeout_secs": {"type": "number", "description": "Seconds the operator has for each question"}
                }}),
            ),
        ),
        Tool::new(
            "answer",
            "Answer what a run awaits (the question_id of an awaiting_operator result): answers maps each \
             question's text to an option label, a list of labels, or {\"text\": \"…\"}; questions left out \
             take their defaults. Or skip it, or give an approval's verdict. Then follows the run: returns its \
             result, or the next awaiting_operator.",
            object(
                json!({"type": "object", "required": ["question_id"], "properties": {
                    "question_id": {"type": "string"},
                    "answers": {"type": "object"},
                    "skip": {"type": "boolean"},
                    "verdict": {"type": "string", "enum": ["allow", "deny"]},
                    "scope": {"type": "string", "enum": ["turn", "action", "session"]}
                }}),
            ),
        ),
        Tool::new(
            "runs",
            "The runs this studio started, and what each waits on.",
            object(json!({"type": "object", "properties": {}})),
        ),
    ]
}

/// Why the `answer` tool's arguments are not a reply to an item.
#[derive(Debug, thiserror::Error)]
pub(super) enum AnswerArgsError {
    #[error("answer needs the question_id of an awaiting_operator result")]
    NoQuestionId,
    #[error("{0:?} is not a question id")]
    NotAQuestionId(String),
    #[error("scope: {0}")]
    Scope(serde_json::Error),
    #[error("verdict {0:?}: use allow or deny")]
    Verdict(String),
    #[error("answers: {0}")]
    Answers(serde_json::Error),
}

/// The `answer` tool's arguments: the item and the reply.
pub(super) fn reply_of(args: &Map<String, Value>) -> Result<(ItemId, WireReply), AnswerArgsError> {
    let question_id = args
        .get("question_id")
        .and_then(Value::as_str)
        .ok_or(AnswerArgsError::NoQuestionId)?;
    let id = question_id
        .parse::<uuid::Uuid>()
        .map(ItemId)
        .map_err(|_| AnswerArgsError::NotAQuestionId(question_id.to_owned()))?;
    let reply = match (
        args.get("verdict").and_then(Value::as_str),
        args.get("skip"),
    ) {
        (Some("allow"), _) => {
            let scope = args
                .get("scope")
                .map(|s| serde_json::from_value::<Scope>(s.clone()))
                .transpose()
                .map_err(AnswerArgsError::Scope)?;
            WireReply::Approve { scope }
        }
        (Some("deny"), _) => WireReply::Deny,
        (Some(other), _) => return Err(AnswerArgsError::Verdict(other.to_owned())),
        (None, Some(Value::Bool(true))) => WireReply::Skip,
        (None, _) => {
            let answers = args.get("answers").cloned().unwrap_or_else(|| json!({}));
            WireReply::Answer {
                answers: serde_json::from_value(answers).map_err(AnswerArgsError::Answers)?,
                notes: Default::default(),
            }
        }
    };
    Ok((id, reply))
}
