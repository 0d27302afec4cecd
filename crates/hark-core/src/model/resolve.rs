//! Answer resolution (SPEC §4): the operator's picks, checked against the
//! request the core holds, with defaults filled in.
//!
//! Every surface (desktop, terminal, script, CLI) hands the core what the
//! operator picked; only this module turns it into the agent's answers, so
//! "just pressed Enter" and "picked exactly the defaults" come out the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::schema::{AnswerValue, Answers, AskRequest, MAX_FREE_TEXT_BYTES};
use crate::model::validate::Issue;
use crate::text::json_len;

/// What the operator did with one question.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Pick {
    /// Free text typed instead of picking ("Other"): `{"text": "…"}`.
    Text { text: String },
    /// One label: `"label"`.
    Label(String),
    /// Labels, for multiSelect: `["a", "b"]`; `[]` is an explicit "none".
    Labels(Vec<String>),
}

/// The operator's picks, keyed by question text. A question left out takes
/// its default.
pub type Picks = BTreeMap<String, Pick>;

/// The operator's notes on their answers, keyed by question text
/// (AskUserQuestion's "free-text notes the user added to their selection").
pub type Notes = BTreeMap<String, String>;

/// How long one note may be, in bytes of JSON.
pub const MAX_NOTE_BYTES: usize = 16 * 1024;

/// What the operator replied to a question set: picks, and notes on them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    pub picks: Picks,
    pub notes: Notes,
}

impl From<Picks> for Answer {
    fn from(picks: Picks) -> Answer {
        Answer {
            picks,
            notes: Notes::new(),
        }
    }
}

/// What AskUserQuestion's answer says beside one question's answer: the
/// picked option's preview, the operator's notes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// The answers an agent receives, and which of them the operator never touched.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub answers: Answers,
    /// Question texts answered by their default because the operator left them out.
    pub defaulted: Vec<String>,
    /// Per question text: the picked option's preview and the operator's
    /// notes, where there are any.
    /// (Absent from the JSON when empty.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Annotation>,
}

/// Resolves the operator's picks against the request.
pub fn resolve(request: &AskRequest, picks: &Picks) -> Result<Resolution, Vec<Issue>> {
    resolve_answer(request, &Answer::from(picks.clone()))
}

/// Resolves the operator's picks and notes against the request.
pub fn resolve_answer(request: &AskRequest, answer: &Answer) -> Result<Resolution, Vec<Issue>> {
    let picks = &answer.picks;
    let mut issues = Vec::new();
    for text in picks.keys() {
        if request.question(text).is_none() {
            issues.push(Issue::new(
                format!("answers[{text:?}]"),
                "is not a question of this call",
            ));
        }
    }
    let mut answers = Answers::new();
    let mut defaulted = Vec::new();
    for q in &request.questions {
        let path = format!("answers[{:?}]", q.question);
        let value = match picks.get(&q.question) {
            None => match q.default_answer() {
                Some(value) => {
                    defaulted.push(q.question.clone());
                    value
                }
                None => {
                    issues.push(Issue::new(
                        path,
                        "has no answer and the question has no default",
                    ));
                    continue;
                }
            },
            Some(Pick::Text { text }) => {
                if text.trim().is_empty() {
                    issues.push(Issue::new(path, "free text must not be empty"));
                    continue;
                }
                let weight = json_len(text);
                if weight > MAX_FREE_TEXT_BYTES {
                    issues.push(Issue::new(
                        path,
                        format!("free text must be at most {MAX_FREE_TEXT_BYTES} bytes (as JSON), got {weight}"),
                    ));
                    continue;
                }
                q.shape(vec![text.clone()])
            }
            Some(Pick::Label(label)) => {
                if !q.has_option(label) {
                    issues.push(Issue::new(
                        path,
                        format!("{label:?} is not one of the options"),
                    ));
                    continue;
                }
                q.shape(vec![label.clone()])
            }
            Some(Pick::Labels(labels)) => {
                let unknown: Vec<&String> = labels.iter().filter(|l| !q.has_option(l)).collect();
                if !unknown.is_empty() {
                    issues.push(Issue::new(
                        path,
                        format!("{unknown:?} are not options of this question"),
                    ));
                    continue;
                }
                if !q.multi_select && labels.len() != 1 {
                    issues.push(Issue::new(
                        path,
                        format!(
                            "takes exactly one label (not multiSelect), got {}",
                            labels.len()
                        ),
                    ));
                    continue;
                }
                // A label named twice is picked once, as a box ticked twice is.
                let mut labels = labels.clone();
                let mut seen = std::collections::HashSet::new();
                labels.retain(|l| seen.insert(l.clone()));
                if q.multi_select {
                    AnswerValue::Many(labels)
                } else {
                    q.shape(labels)
                }
            }
        };
        answers.insert(q.question.clone(), value);
    }
    let annotations = annotate(request, &answers, &answer.notes, &mut issues);
    if issues.is_empty() {
        Ok(Resolution {
            answers,
            defaulted,
            annotations,
        })
    } else {
        Err(issues)
    }
}

/// Each answer's annotation: the picked option's preview (one option
/// picked), and the operator's note, checked.
fn annotate(
    request: &AskRequest,
    answers: &Answers,
    notes: &Notes,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, Annotation> {
    for (text, note) in notes {
        let path = format!("notes[{text:?}]");
        if request.question(text).is_none() {
            issues.push(Issue::new(path, "is not a question of this call"));
        } else if json_len(note) > MAX_NOTE_BYTES {
            issues.push(Issue::new(
                path,
                format!(
                    "must be at most {MAX_NOTE_BYTES} bytes (as JSON), got {}",
                    json_len(note)
                ),
            ));
        }
    }
    let mut annotations = BTreeMap::new();
    for q in &request.questions {
        let preview = match answers.get(&q.question) {
            Some(AnswerValue::One(label)) => q
                .options
                .iter()
                .find(|o| &o.label == label)
                .and_then(|o| o.preview.clone()),
            _ => None,
        };
        let notes = notes
            .get(&q.question)
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        if preview.is_some() || notes.is_some() {
            annotations.insert(q.question.clone(), Annotation { preview, notes });
        }
    }
    annotations
}

/// The defaults a skip would have landed on: named to the agent as
/// unconfirmed, never applied as answers.
pub fn unconfirmed_defaults(request: &AskRequest) -> Answers {
    request
        .questions
        .iter()
        .filter_map(|q| Some((q.question.clone(), q.default_answer()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::validate::{Rules, validate};
    use serde_json::json;

    fn request() -> AskRequest {
        validate(
            &json!({"questions": [
                {"question": "Which db?", "header": "DB", "multiSelect": false, "options": [
                    {"label": "Postgres (Recommended)", "description": ""},
                    {"label": "SQLite", "description": ""}]},
                {"question": "Which features?", "header": "Features", "multiSelect": true, "default": ["Auth"], "options": [
                    {"label": "Auth", "description": ""},
                    {"label": "Billing", "description": ""},
                    {"label": "Search", "description": ""}]},
                {"question": "Name?", "header": "Name", "multiSelect": false, "options": [
                    {"label": "foo", "description": ""},
                    {"label": "bar", "description": ""}]}
            ]}),
            Rules::default(),
        )
        .unwrap()
    }

    fn picks(v: serde_json::Value) -> Picks {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn picks_shape_into_answers() {
        let r = resolve(
            &request(),
            &picks(json!({"Which db?": "SQLite", "Which features?": ["Auth", "Search"], "Name?": {"text": "baz"}})),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&r.answers).unwrap(),
            json!({"Which db?": "SQLite", "Which features?": ["Auth", "Search"], "Name?": "baz"})
        );
        assert!(r.defaulted.is_empty());
    }

    #[test]
    fn omitted_questions_take_their_default_and_are_recorded() {
        let r = resolve(&request(), &picks(json!({"Name?": "foo"}))).unwrap();
        assert_eq!(
            r.answers["Which db?"],
            AnswerValue::One("Postgres (Recommended)".into())
        );
        assert_eq!(
            r.answers["Which features?"],
            AnswerValue::Many(vec!["Auth".into()])
        );
        assert_eq!(r.defaulted, ["Which db?", "Which features?"]);
    }

    #[test]
    fn an_explicit_empty_multiselect_is_none_not_the_default() {
        let r = resolve(
            &request(),
            &picks(json!({"Which features?": [], "Name?": "bar"})),
        )
        .unwrap();
        assert_eq!(r.answers["Which features?"], AnswerValue::Many(vec![]));
        assert_eq!(r.defaulted, ["Which db?"]);
    }

    #[test]
    fn a_single_label_on_a_multiselect_is_still_an_array() {
        let r = resolve(
            &request(),
            &picks(json!({"Which features?": "Billing", "Name?": "foo"})),
        )
        .unwrap();
        assert_eq!(
            r.answers["Which features?"],
            AnswerValue::Many(vec!["Billing".into()])
        );
    }

    #[test]
    fn bad_picks_are_refused_with_every_issue() {
        let issues = resolve(
            &request(),
            &picks(json!({"Which db?": ["Postgres (Recommended)", "SQLite"], "Which features?": ["Nope"], "Unknown?": "x"})),
        )
        .unwrap_err();
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "answers[\"Unknown?\"]",
                "answers[\"Which db?\"]",
                "answers[\"Which features?\"]",
                "answers[\"Name?\"]"
            ]
        );
    }

    #[test]
    fn skip_names_the_defaults_it_did_not_confirm() {
        let defaults = unconfirmed_defaults(&request());
        assert_eq!(
            serde_json::to_value(defaults).unwrap(),
            json!({"Which db?": "Postgres (Recommended)", "Which features?": ["Auth"]})
        );
    }

    #[test]
    fn free_text_past_the_bound_is_refused_and_a_label_named_twice_counts_once() {
        let long = "t".repeat(MAX_FREE_TEXT_BYTES);
        let picks = Picks::from([("Name?".to_owned(), Pick::Text { text: long })]);
        let issues = resolve(&request(), &picks).unwrap_err();
        assert!(
            issues[0]
                .message
                .starts_with("free text must be at most 65536 bytes"),
            "{issues:?}"
        );
        let fits = "t".repeat(MAX_FREE_TEXT_BYTES - 2);
        let picks = Picks::from([("Name?".to_owned(), Pick::Text { text: fits })]);
        assert!(resolve(&request(), &picks).is_ok());

        let twice = Pick::Labels(vec!["Auth".into(), "Search".into(), "Auth".into()]);
        let picks = Picks::from([
            ("Which features?".to_owned(), twice),
            ("Name?".to_owned(), Pick::Label("foo".into())),
        ]);
        let r = resolve(&request(), &picks).unwrap();
        assert_eq!(
            r.answers["Which features?"],
            AnswerValue::Many(vec!["Auth".into(), "Search".into()])
        );
    }
}
