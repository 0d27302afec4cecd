//! The studio's tools, typed: rmcp's `#[tool]` makes each one's input
//! schema from its parameter struct. `run` takes a run's [`RunOptions`],
//! the one struct `hark run` and the daemon's dispatch take too, so every
//! option of a run reaches the studio, and its schema is generated, never
//! written by hand.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use serde::Deserialize;
use serde_json::{Map, Value};

use hark_core::bridge::options::RunOptions;
use hark_core::bridge::wire::WireReply;
use hark_core::model::approval::Scope;
use hark_core::model::ids::ItemId;

use super::Studio;
use super::ask::Caller;

#[tool_router(router = tools, vis = "pub(super)")]
impl Studio {
    /// Dispatch an agent (hark run: Claude Code, Codex, OpenCode or Gemini
    /// CLI) to do PROMPT, attached to the operator. Its questions are put to
    /// you as elicitations when you support them; otherwise this returns
    /// {"status":"awaiting_operator","run_id","question_id","questions"} and
    /// you answer with the `answer` tool. Returns the run's result, exit
    /// code and cost when it ends.
    #[tool(name = "run")]
    async fn run_tool(
        &self,
        Parameters(options): Parameters<RunOptions>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        self.run(options, &Caller::of(&context)).await
    }

    /// Answer what a run awaits (the question_id of an awaiting_operator
    /// result): answers maps each question's text to an option label, a
    /// list of labels, or {"text": "…"}; questions left out take their
    /// defaults. Or skip it, or give an approval's verdict. Then follows the
    /// run: returns its result, or the next awaiting_operator.
    #[tool(name = "answer")]
    async fn answer_tool(
        &self,
        Parameters(args): Parameters<AnswerParams>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        self.answer(args, &Caller::of(&context)).await
    }

    /// The runs this studio started, and what each waits on.
    #[tool(name = "runs")]
    fn runs_tool(&self) -> CallToolResult {
        self.list()
    }
}

/// The `answer` tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(super) struct AnswerParams {
    /// The question_id of an awaiting_operator result.
    question_id: String,
    /// Each question's text → an option label, a list of labels, or
    /// {"text": "…"}.
    #[serde(default)]
    answers: Option<Map<String, Value>>,
    /// Skip it: the agent proceeds without confirmed answers.
    #[serde(default)]
    skip: bool,
    /// An approval's verdict.
    #[serde(default)]
    verdict: Option<Verdict>,
    /// How far an allow reaches (its default when absent).
    #[serde(default)]
    scope: Option<Scope>,
}

/// An approval's verdict.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Allow,
    Deny,
}

/// Why the `answer` tool's arguments are not a reply to an item.
#[derive(Debug, thiserror::Error)]
pub(super) enum AnswerArgsError {
    #[error("{0:?} is not a question id")]
    NotAQuestionId(String),
    #[error("answers: {0}")]
    Answers(serde_json::Error),
}

impl AnswerParams {
    /// The item and the reply.
    pub(super) fn reply(self) -> Result<(ItemId, WireReply), AnswerArgsError> {
        let id = self
            .question_id
            .parse::<uuid::Uuid>()
            .map(ItemId)
            .map_err(|_| AnswerArgsError::NotAQuestionId(self.question_id.clone()))?;
        let reply = match (self.verdict, self.skip) {
            (Some(Verdict::Allow), _) => WireReply::Approve { scope: self.scope },
            (Some(Verdict::Deny), _) => WireReply::Deny,
            (None, true) => WireReply::Skip,
            (None, false) => WireReply::Answer {
                answers: serde_json::from_value(Value::Object(self.answers.unwrap_or_default()))
                    .map_err(AnswerArgsError::Answers)?,
                notes: Default::default(),
            },
        };
        Ok((id, reply))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `run` tool's schema is `RunOptions`'s: every option of `hark
    /// run` an agent may send, the ones the hand-written schema lacked
    /// among them.
    #[test]
    fn run_takes_every_run_option() {
        let tools = Studio::tools();
        let run = tools.get("run").unwrap();
        let properties = run.input_schema["properties"].as_object().unwrap();
        for option in [
            "prompt",
            "verb",
            "agent",
            "agent_kind",
            "cwd",
            "session",
            "read_only",
            "no_confine",
            "timeout_secs",
            "on_timeout",
            "intake",
            "answers",
        ] {
            assert!(properties.contains_key(option), "run lacks {option}");
        }
        let schema = serde_json::to_string(&run.input_schema).unwrap();
        assert!(schema.contains("converse"), "{schema}");
        assert_eq!(json!(run.input_schema["required"]), json!(["prompt"]));
        let names: Vec<String> = tools
            .list_all()
            .into_iter()
            .map(|t| t.name.into())
            .collect();
        assert_eq!(names, ["answer", "run", "runs"]);
    }

    #[test]
    fn answer_arguments_are_the_reply() {
        let id = uuid::Uuid::new_v4().to_string();
        let reply = |args: Value| {
            serde_json::from_value::<AnswerParams>(args)
                .unwrap()
                .reply()
        };
        let (_, allowed) =
            reply(json!({"question_id": id, "verdict": "allow", "scope": "session"})).unwrap();
        assert_eq!(
            allowed,
            WireReply::Approve {
                scope: Some(Scope::Session)
            }
        );
        let (_, skipped) = reply(json!({"question_id": id, "skip": true})).unwrap();
        assert_eq!(skipped, WireReply::Skip);
        assert!(reply(json!({"question_id": "nope"})).is_err());
        assert!(
            serde_json::from_value::<AnswerParams>(json!({"question_id": id, "verdict": "maybe"}))
                .is_err()
        );
    }
}
