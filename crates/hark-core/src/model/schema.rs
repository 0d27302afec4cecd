//! AskUserQuestion's request and answer shapes, verbatim (SPEC §3).
//!
//! Request: `{"questions":[{"question","header","options":[{"label","description"}],"multiSelect"}]}`
//! Answer:  `{"answers":{"<question text>":"<label>" | ["<label>",…]}}`
//!
//! These types hold a request that has passed [`crate::model::validate`]; raw input
//! from an agent is validated as JSON first, so that every issue can be named
//! with its path.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::text::json_len;

/// The label suffix that marks an option as the question's pre-picked default.
pub const RECOMMENDED_SUFFIX: &str = " (Recommended)";

/// Limits as AskUserQuestion documents them.
pub const MIN_QUESTIONS: usize = 1;
pub const MAX_QUESTIONS: usize = 4;
pub const MIN_OPTIONS: usize = 2;
pub const MAX_OPTIONS: usize = 4;
pub const MAX_HEADER_CHARS: usize = 12;

/// How much an ask may weigh, in bytes of JSON: the request, plus each
/// question's text twice more and its labels (or default) once more, as an
/// answer repeats them (keyed by question text, `defaulted` naming it).
/// With [`MAX_FREE_TEXT_BYTES`] for each of [`MAX_QUESTIONS`] answers this
/// leaves over 100 KiB of a 1 MiB frame for the rest of an item (ids,
/// session, asker), so the largest valid item, answered, travels whole in
/// one frame (`get`, the inbox feed).
pub const MAX_ASK_BYTES: usize = 640 * 1024;

/// How long one free-text answer may be, in bytes of JSON.
pub const MAX_FREE_TEXT_BYTES: usize = 64 * 1024;

/// How long one option's preview may be, in bytes of JSON.
pub const MAX_PREVIEW_BYTES: usize = 32 * 1024;

/// One call's questions.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRequest {
    pub questions: Vec<Question>,
}

/// One question, as the agent wrote it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The full question text; also its key in the answers.
    pub question: String,
    /// A short chip label (at most [`MAX_HEADER_CHARS`] characters).
    pub header: String,
    pub options: Vec<QuestionOption>,
    /// Whether several options may be picked; the answer is then an array.
    #[serde(default)]
    pub multi_select: bool,
    /// An explicit pre-picked default (a label, or labels for multiSelect).
    /// Without it, options whose label ends in ` (Recommended)` are the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<AnswerValue>,
}

/// One choice of a question.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
    /// What to show while the option is focused (AskUserQuestion's
    /// `preview`: a mockup, a code snippet, a comparison), Markdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub preview: Option<String>,
}

/// One question's answer: a label (or free text) for a single-select
/// question, an array of them for a multiSelect one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnswerValue {
    One(String),
    Many(Vec<String>),
}

/// The answer map, keyed by question text.
pub type Answers = BTreeMap<String, AnswerValue>;

impl Question {
    /// The labels this question takes when the operator does not answer it,
    /// or `None` when it has no default.
    pub fn default_labels(&self) -> Option<Vec<&str>> {
        if let Some(default) = &self.default {
            return Some(match default {
                AnswerValue::One(label) => vec![label.as_str()],
                AnswerValue::Many(labels) => labels.iter().map(String::as_str).collect(),
            });
        }
        let recommended: Vec<&str> = self
            .options
            .iter()
            .map(|o| o.label.as_str())
            .filter(|l| l.ends_with(RECOMMENDED_SUFFIX))
            .collect();
        (!recommended.is_empty()).then_some(recommended)
    }

    /// The default as an answer value of this question's shape.
    pub fn default_answer(&self) -> Option<AnswerValue> {
        let labels = self.default_labels()?;
        Some(self.shape(labels.into_iter().map(str::to_owned).collect()))
    }

    /// Wraps picked labels in the answer shape of this question.
    pub fn shape(&self, mut labels: Vec<String>) -> AnswerValue {
        if self.multi_select || labels.len() != 1 {
            AnswerValue::Many(labels)
        } else {
            AnswerValue::One(labels.remove(0))
        }
    }

    pub fn has_option(&self, label: &str) -> bool {
        self.options.iter().any(|o| o.label == label)
    }
}

impl AskRequest {
    /// What the request weighs against [`MAX_ASK_BYTES`]: its JSON, and
    /// what an answer to it repeats of it.
    pub fn weight(&self) -> usize {
        let echoed: usize = self
            .questions
            .iter()
            .map(|q| {
                let labels: usize = q.options.iter().map(|o| json_len(&o.label) + 1).sum();
                2 * (json_len(&q.question) + 1) + labels.max(json_len(&q.default))
            })
            .sum();
        json_len(self) + echoed
    }

    /// The question headers, in order (for trace events and titles).
    pub fn headers(&self) -> Vec<&str> {
        self.questions.iter().map(|q| q.header.as_str()).collect()
    }

    pub fn question(&self, text: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.question == text)
    }
}
