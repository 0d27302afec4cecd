//! What a write-mode approval asks, and the verdicts it can get: an agent
//! dispatched read-only asks before each mutating step through
//! `mcp__operator__approve` (SPEC §5). A write is put to the operator as one
//! question whose options are the grant scopes plus deny
//! ([`Approval::request`]); the reply is a [`Verdict`], never answers (the
//! registry refuses the mismatch). Which calls need one is the gate's
//! business (the `gate` module, above this one).

use serde::{Deserialize, Serialize};

use crate::model::schema::{AnswerValue, AskRequest, Question, QuestionOption};
use crate::text::clip;

/// How far an approval reaches.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Writes are allowed for the rest of this run (the pre-picked default).
    Turn,
    /// Just this one call.
    Action,
    /// Writes are allowed for the rest of the session, across runs.
    Session,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Turn => "turn",
            Scope::Action => "action",
            Scope::Session => "session",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text.trim().to_ascii_lowercase().as_str() {
            "turn" => Some(Scope::Turn),
            "action" => Some(Scope::Action),
            "session" => Some(Scope::Session),
            _ => None,
        }
    }
}

/// The option labels of an approval question, by meaning.
const TURN: &str = "Allow for this run (Recommended)";
const ACTION: &str = "Allow this action only";
const SESSION: &str = "Allow for this session";
const DENY: &str = "Deny";

/// What the operator is asked to allow, as the modal and the inbox show it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The tool the agent wants to use (`Edit`, `Bash`, `mcp__github__create_pr`).
    pub tool: String,
    /// What it acts on: a file path, a command.
    pub target: String,
    /// A diff preview for edits, the full command for Bash, the input otherwise.
    pub preview: String,
    /// An external effect: only this action or deny, asked every time.
    pub external: bool,
}

impl Approval {
    /// The scopes this approval may be granted with.
    pub fn offered(&self) -> &'static [Scope] {
        if self.external {
            &[Scope::Action]
        } else {
            &[Scope::Turn, Scope::Action, Scope::Session]
        }
    }

    /// The scope an approval without one takes: turn, or the action alone
    /// for an external effect.
    pub fn default_scope(&self) -> Scope {
        if self.external {
            Scope::Action
        } else {
            Scope::Turn
        }
    }

    /// The one question put to the operator: "The agent wants to edit X /
    /// run Y. Allow this write action?"
    pub fn request(&self) -> AskRequest {
        let what = match self.tool.as_str() {
            "Bash" => format!("run `{}`", clip(&self.target, 200)),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => format!("edit {}", self.target),
            tool => format!("use {tool} on {}", clip(&self.target, 200)),
        };
        let kind = if self.external {
            "This has an effect outside this machine."
        } else {
            "Allow this write action?"
        };
        let option = |label: &str, description: &str| QuestionOption {
            label: label.to_owned(),
            description: description.to_owned(),
            preview: None,
        };
        let mut options = Vec::new();
        if !self.external {
            options.push(option(TURN, "Allow writes for the rest of this run."));
        }
        options.push(option(
            ACTION,
            "Allow just this one call; ask again next time.",
        ));
        if !self.external {
            options.push(option(
                SESSION,
                "Allow writes for the rest of the session, across runs.",
            ));
        }
        options.push(option(DENY, "Keep the agent read-only."));
        AskRequest {
            questions: vec![Question {
                question: format!("The agent wants to {what}. {kind}"),
                header: "Approval".to_owned(),
                options,
                multi_select: false,
                default: self.external.then(|| AnswerValue::One(DENY.to_owned())),
            }],
        }
    }

    /// The option label of [`Approval::request`] for a verdict.
    pub fn label_of(verdict: Verdict) -> &'static str {
        match verdict {
            Verdict::Allow(Scope::Turn) => TURN,
            Verdict::Allow(Scope::Action) => ACTION,
            Verdict::Allow(Scope::Session) => SESSION,
            Verdict::Deny => DENY,
        }
    }

    /// The verdict an option label of [`Approval::request`] stands for, for
    /// surfaces that show the question and return the picked label.
    pub fn verdict_of(label: &str) -> Option<Verdict> {
        match label {
            TURN => Some(Verdict::Allow(Scope::Turn)),
            ACTION => Some(Verdict::Allow(Scope::Action)),
            SESSION => Some(Verdict::Allow(Scope::Session)),
            DENY => Some(Verdict::Deny),
            _ => None,
        }
    }
}

/// The operator's verdict on an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed, this far.
    Allow(Scope),
    /// The agent stays read-only.
    Deny,
}

/// Who decided a proposed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A read-only step: nobody needed to.
    Policy,
    /// A grant given earlier in this run or session.
    Grant,
    /// The operator, just now.
    Operator,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_maps_back_to_verdicts() {
        let edit = Approval {
            tool: "Write".into(),
            target: "a".into(),
            preview: "x".into(),
            external: false,
        };
        let request = edit.request();
        crate::model::validate::validate(
            &serde_json::to_value(&request).unwrap(),
            crate::model::validate::Rules::default(),
        )
        .expect("the approval question is a valid ask");
        let verdicts: Vec<Option<Verdict>> = request.questions[0]
            .options
            .iter()
            .map(|o| Approval::verdict_of(&o.label))
            .collect();
        assert_eq!(
            verdicts,
            [
                Some(Verdict::Allow(Scope::Turn)),
                Some(Verdict::Allow(Scope::Action)),
                Some(Verdict::Allow(Scope::Session)),
                Some(Verdict::Deny)
            ]
        );
    }
}
