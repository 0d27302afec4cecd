//! Intake (SPEC §6): authored questions asked before the agent starts, when
//! changing course is cheap. They cost no model call, have no timeout, and
//! their answers go into the agent's prompt as a clear block.
//!
//! ```json
//! { "preamble": "Before the release:",
//!   "questions": [{"id": "env", "prompt": "Which environment?",
//!                  "options": [{"value": "staging", "label": "Staging"},
//!                              {"value": "prod", "label": "Production"}],
//!                  "defaults": ["staging"], "multi": false}],
//!   "when": "thread-start" }
//! ```
//!
//! Each question is put to the operator as an AskUserQuestion question (the
//! prompt is its text, so a scripted prompter answers it by prompt); the
//! picked labels come back as their values. `--answer id=value` gives an
//! answer on the command line instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::schema::{
    AnswerValue, Answers, AskRequest, MAX_HEADER_CHARS, MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS,
    Question, QuestionOption,
};

/// An intake, as authored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intake {
    #[serde(default)]
    pub preamble: String,
    pub questions: Vec<IntakeQuestion>,
    #[serde(default)]
    pub when: When,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntakeQuestion {
    pub id: String,
    pub prompt: String,
    pub options: Vec<IntakeOption>,
    /// Values pre-picked, confirmed with Enter.
    #[serde(default)]
    pub defaults: Vec<String>,
    #[serde(default)]
    pub multi: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntakeOption {
    pub value: String,
    pub label: String,
}

/// When the intake is asked in a conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    /// Once, before the first turn.
    #[default]
    ThreadStart,
    /// Before every turn.
    EveryTurn,
}

/// An intake that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("cannot read the intake {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the intake{} is not valid: {reason}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Invalid {
        path: Option<PathBuf>,
        reason: Invalid,
    },
}

/// What is wrong with an intake.
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    #[error(transparent)]
    Json(serde_json::Error),
    #[error("it has no questions")]
    NoQuestions,
    #[error("question ids must be unique and non-empty ({0:?})")]
    Id(String),
    #[error("question {id:?} has {count} options; it needs {MIN_OPTIONS} to {MAX_OPTIONS}")]
    Options { id: String, count: usize },
    #[error("question {id:?}: default {default:?} is not one of its values")]
    Default { id: String, default: String },
    #[error("question {0:?} takes one answer but has several defaults")]
    Defaults(String),
}

/// An answer given instead of asked that does not fit the intake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GivenError {
    #[error("the intake has no question {0:?}")]
    NoQuestion(String),
    #[error("{id:?} takes one of {}, not {value:?}", values.join(", "))]
    NotAValue {
        id: String,
        value: String,
        values: Vec<String>,
    },
    #[error("{0:?} takes one value")]
    OneValue(String),
}

/// Answers by question id: the picked values (or the operator's own text).
pub type Given = BTreeMap<String, Vec<String>>;

impl Intake {
    /// Reads and checks an intake file.
    pub fn load(path: &Path) -> Result<Intake, IntakeError> {
        let text = std::fs::read_to_string(path).map_err(|source| IntakeError::Read {
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_str(&text)
            .map_err(Invalid::Json)
            .and_then(Intake::checked)
            .map_err(|reason| IntakeError::Invalid {
                path: Some(path.to_owned()),
                reason,
            })
    }

    /// Reads and checks an intake given as JSON (the dispatch form's).
    pub fn from_value(value: serde_json::Value) -> Result<Intake, IntakeError> {
        serde_json::from_value(value)
            .map_err(Invalid::Json)
            .and_then(Intake::checked)
            .map_err(|reason| IntakeError::Invalid { path: None, reason })
    }

    fn checked(self) -> Result<Intake, Invalid> {
        self.check()?;
        Ok(self)
    }

    fn check(&self) -> Result<(), Invalid> {
        if self.questions.is_empty() {
            return Err(Invalid::NoQuestions);
        }
        let mut ids = std::collections::HashSet::new();
        for q in &self.questions {
            if q.id.trim().is_empty() || !ids.insert(q.id.as_str()) {
                return Err(Invalid::Id(q.id.clone()));
            }
            if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&q.options.len()) {
                return Err(Invalid::Options {
                    id: q.id.clone(),
                    count: q.options.len(),
                });
            }
            if let Some(d) = q.defaults.iter().find(|d| q.label(d).is_none()) {
                return Err(Invalid::Default {
                    id: q.id.clone(),
                    default: d.clone(),
                });
            }
            if !q.multi && q.defaults.len() > 1 {
                return Err(Invalid::Defaults(q.id.clone()));
            }
        }
        Ok(())
    }

    /// The questions still to ask (those `given` does not answer), as ask
    /// calls of at most four questions each.
    pub fn requests(&self, given: &Given) -> Vec<AskRequest> {
        let open: Vec<Question> = self
            .questions
            .iter()
            .filter(|q| !given.contains_key(&q.id))
            .map(IntakeQuestion::question)
            .collect();
        open.chunks(MAX_QUESTIONS)
            .map(|chunk| AskRequest {
                questions: chunk.to_vec(),
            })
            .collect()
    }

    /// Answers given instead of asked (`hark run --answer ID=VALUE`): a
    /// value must be one of the question's (repeat a pair for several
    /// values of a multi question).
    pub fn given<'a>(
        &self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Given, GivenError> {
        let mut given = Given::new();
        for (id, value) in pairs {
            let q = self
                .questions
                .iter()
                .find(|q| q.id == id)
                .ok_or_else(|| GivenError::NoQuestion(id.to_owned()))?;
            if q.label(value).is_none() {
                return Err(GivenError::NotAValue {
                    id: id.to_owned(),
                    value: value.to_owned(),
                    values: q.options.iter().map(|o| o.value.clone()).collect(),
                });
            }
            let values = given.entry(id.to_owned()).or_default();
            if !q.multi && !values.is_empty() {
                return Err(GivenError::OneValue(id.to_owned()));
            }
            values.push(value.to_owned());
        }
        Ok(given)
    }

    /// Adds the operator's answers (labels, or their own text) as values.
    pub fn take_answers(&self, answers: &Answers, given: &mut Given) {
        for q in &self.questions {
            let Some(answer) = answers.get(&q.prompt) else {
                continue;
            };
            let labels = match answer {
                AnswerValue::One(label) => vec![label.clone()],
                AnswerValue::Many(labels) => labels.clone(),
            };
            let values = labels
                .into_iter()
                .map(|label| q.value(&label).unwrap_or(label))
                .collect();
            given.insert(q.id.clone(), values);
        }
    }

    /// The block put before the agent's prompt.
    pub fn block(&self, given: &Given) -> String {
        let mut out = String::new();
        if !self.preamble.trim().is_empty() {
            out.push_str(self.preamble.trim());
            out.push('\n');
        }
        out.push_str("The operator answered these questions before the work started:\n");
        for q in &self.questions {
            let values = given.get(&q.id).map(|v| v.join(", ")).unwrap_or_default();
            out.push_str(&format!("- {} ({}): {values}\n", q.prompt, q.id));
        }
        out
    }
}

impl IntakeQuestion {
    fn label(&self, value: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|o| o.value == value)
            .map(|o| o.label.as_str())
    }

    fn value(&self, label: &str) -> Option<String> {
        self.options
            .iter()
            .find(|o| o.label == label)
            .map(|o| o.value.clone())
    }

    fn question(&self) -> Question {
        let labels: Vec<String> = self
            .defaults
            .iter()
            .filter_map(|d| self.label(d).map(str::to_owned))
            .collect();
        let default = match (self.multi, labels.len()) {
            (_, 0) => None,
            (false, _) => Some(AnswerValue::One(labels[0].clone())),
            (true, _) => Some(AnswerValue::Many(labels)),
        };
        Question {
            question: self.prompt.clone(),
            header: self.id.chars().take(MAX_HEADER_CHARS).collect(),
            options: self
                .options
                .iter()
                .map(|o| QuestionOption {
                    label: o.label.clone(),
                    description: String::new(),
                    preview: None,
                })
                .collect(),
            multi_select: self.multi,
            default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn intake() -> Intake {
        serde_json::from_value(json!({
            "preamble": "Release prep.",
            "questions": [
                {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
                 "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]},
                {"id": "checks", "prompt": "Which checks?", "multi": true,
                 "options": [{"value": "unit", "label": "Unit"}, {"value": "e2e", "label": "End to end"}]}
            ],
            "when": "every-turn"
        }))
        .unwrap()
    }

    #[test]
    fn questions_become_a_valid_ask_and_answers_come_back_as_values() {
        let intake = intake();
        intake.check().unwrap();
        assert_eq!(intake.when, When::EveryTurn);
        let requests = intake.requests(&Given::new());
        assert_eq!(requests.len(), 1);
        let raw = serde_json::to_value(&requests[0]).unwrap();
        crate::model::validate::validate(&raw, crate::model::validate::Rules::default()).unwrap();
        assert_eq!(
            requests[0].questions[0].default,
            Some(AnswerValue::One("Staging".into()))
        );

        let mut given = Given::new();
        let answers = Answers::from([
            (
                "Which environment?".into(),
                AnswerValue::One("Production".into()),
            ),
            (
                "Which checks?".into(),
                AnswerValue::Many(vec!["End to end".into(), "nightly too".into()]),
            ),
        ]);
        intake.take_answers(&answers, &mut given);
        assert_eq!(given["env"], ["prod"]);
        assert_eq!(given["checks"], ["e2e", "nightly too"]);
        let block = intake.block(&given);
        assert!(block.starts_with("Release prep.\n"), "{block}");
        assert!(
            block.contains("- Which environment? (env): prod\n"),
            "{block}"
        );
    }

    #[test]
    fn command_line_answers_are_checked_and_leave_the_rest_to_ask() {
        let intake = intake();
        let given = intake.given([("env", "prod")]).unwrap();
        assert_eq!(intake.requests(&given)[0].questions.len(), 1);
        assert!(
            intake
                .given([("env", "moon")])
                .unwrap_err()
                .to_string()
                .contains("staging, prod")
        );
        assert_eq!(
            intake.given([("nope", "1")]),
            Err(GivenError::NoQuestion("nope".into()))
        );
        assert_eq!(
            intake.given([("env", "prod"), ("env", "staging")]),
            Err(GivenError::OneValue("env".into()))
        );
    }

    #[test]
    fn malformed_intakes_are_refused_with_the_reason() {
        let mut bad = intake();
        bad.questions[0].defaults = vec!["moon".into()];
        assert!(bad.check().unwrap_err().to_string().contains("moon"));
        let mut bad = intake();
        bad.questions[1].id = "env".into();
        assert!(bad.check().is_err());
        let mut bad = intake();
        bad.questions[0].options.truncate(1);
        assert!(bad.check().unwrap_err().to_string().contains("2 to 4"));
    }
}
