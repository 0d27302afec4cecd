//! Validation of an ask call, straight from its JSON arguments.
//!
//! Every issue is collected, each with a path (`questions[1].options`) and a
//! message, so a model can fix its whole call in one go. Unknown fields are
//! accepted and ignored, so a newer client's call still works.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::schema::{
    AskRequest, MAX_ASK_BYTES, MAX_HEADER_CHARS, MAX_OPTIONS, MAX_PREVIEW_BYTES, MAX_QUESTIONS,
    MIN_OPTIONS, MIN_QUESTIONS, RECOMMENDED_SUFFIX,
};
use crate::text::json_len;

/// One thing wrong with a call.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// Where: `questions[1].options[0].label`; empty for the call itself.
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Issue {
        Issue {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Renders issues one per line, as a model or a person reads them.
pub fn describe(issues: &[Issue]) -> String {
    issues
        .iter()
        .map(|i| format!("- {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How strict validation is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rules {
    /// Every question must carry a default (explicit or ` (Recommended)`).
    pub strict_defaults: bool,
}

/// Checks an ask call's arguments and returns the typed request, or every
/// issue found.
pub fn validate(args: &Value, rules: Rules) -> Result<AskRequest, Vec<Issue>> {
    let mut issues = Vec::new();
    let Some(root) = args.as_object() else {
        return Err(vec![Issue::new(
            "",
            format!("arguments must be an object, got {}", kind(args)),
        )]);
    };
    match root.get("questions") {
        None => issues.push(Issue::new("questions", "is required")),
        Some(Value::Array(questions)) => {
            if !(MIN_QUESTIONS..=MAX_QUESTIONS).contains(&questions.len()) {
                issues.push(Issue::new(
                    "questions",
                    format!(
                        "must hold {MIN_QUESTIONS}–{MAX_QUESTIONS} questions, got {}",
                        questions.len()
                    ),
                ));
            }
            let mut texts = HashSet::new();
            for (i, q) in questions.iter().enumerate() {
                let path = format!("questions[{i}]");
                check_question(q, &path, rules, &mut issues);
                if let Some(text) = q.get("question").and_then(Value::as_str)
                    && !texts.insert(text)
                {
                    issues.push(Issue::new(
                        format!("{path}.question"),
                        format!("duplicates an earlier question's text {text:?}; question texts must be unique within a call"),
                    ));
                }
            }
        }
        Some(other) => issues.push(Issue::new(
            "questions",
            format!("must be an array, got {}", kind(other)),
        )),
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let request: AskRequest = serde_json::from_value(args.clone())
        .map_err(|e| vec![Issue::new("", format!("could not read the call: {e}"))])?;
    let weight = request.weight();
    if weight > MAX_ASK_BYTES {
        return Err(vec![Issue::new(
            "questions",
            format!(
                "weigh {weight} bytes, more than the {MAX_ASK_BYTES} an ask may (its JSON, with each question's text counted three times and its labels twice, as its answer repeats them); shorten the descriptions or split the call"
            ),
        )]);
    }
    Ok(request)
}

fn check_question(q: &Value, path: &str, rules: Rules, issues: &mut Vec<Issue>) {
    let Some(q) = q.as_object() else {
        issues.push(Issue::new(
            path,
            format!("must be an object, got {}", kind(q)),
        ));
        return;
    };
    required_text(q, "question", path, issues);
    if let Some(header) = required_text(q, "header", path, issues) {
        let chars = header.chars().count();
        if chars > MAX_HEADER_CHARS {
            issues.push(Issue::new(
                format!("{path}.header"),
                format!("must be at most {MAX_HEADER_CHARS} characters, got {chars} ({header:?})"),
            ));
        }
    }
    // A null is refused here, not read as absent: the typed request has no
    // `Option` to take it, and deserializing it fails with no path.
    let multi = match q.get("multiSelect") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            issues.push(Issue::new(
                format!("{path}.multiSelect"),
                format!("must be a boolean, got {}", kind(other)),
            ));
            false
        }
    };
    let labels = check_options(q, path, issues);
    check_default(q, path, multi, labels.as_deref(), rules, issues);
}

/// Checks `options` and returns their labels when they could be read.
fn check_options(
    q: &Map<String, Value>,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Option<Vec<String>> {
    let opath = format!("{path}.options");
    let options = match q.get("options") {
        None => {
            issues.push(Issue::new(opath, "is required"));
            return None;
        }
        Some(Value::Array(options)) => options,
        Some(other) => {
            issues.push(Issue::new(
                opath,
                format!("must be an array, got {}", kind(other)),
            ));
            return None;
        }
    };
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&options.len()) {
        issues.push(Issue::new(
            &opath,
            format!(
                "must hold {MIN_OPTIONS}–{MAX_OPTIONS} options, got {}",
                options.len()
            ),
        ));
    }
    let mut labels = Vec::new();
    for (j, option) in options.iter().enumerate() {
        let path = format!("{opath}[{j}]");
        let Some(option) = option.as_object() else {
            issues.push(Issue::new(
                path,
                format!("must be an object, got {}", kind(option)),
            ));
            continue;
        };
        if let Some(label) = required_text(option, "label", &path, issues) {
            if labels.iter().any(|l| l == label) {
                issues.push(Issue::new(
                    format!("{path}.label"),
                    format!("duplicates an earlier option's label {label:?}"),
                ));
            }
            labels.push(label.to_owned());
        }
        match option.get("description") {
            None | Some(Value::String(_)) => {}
            Some(other) => issues.push(Issue::new(
                format!("{path}.description"),
                format!("must be a string, got {}", kind(other)),
            )),
        }
        match option.get("preview") {
            None => {}
            Some(Value::String(preview)) if json_len(preview) > MAX_PREVIEW_BYTES => {
                issues.push(Issue::new(
                    format!("{path}.preview"),
                    format!(
                        "must be at most {MAX_PREVIEW_BYTES} bytes (as JSON), got {}",
                        json_len(preview)
                    ),
                ))
            }
            Some(Value::String(_)) => {}
            Some(other) => issues.push(Issue::new(
                format!("{path}.preview"),
                format!("must be a string, got {}", kind(other)),
            )),
        }
    }
    Some(labels)
}

fn check_default(
    q: &Map<String, Value>,
    path: &str,
    multi: bool,
    labels: Option<&[String]>,
    rules: Rules,
    issues: &mut Vec<Issue>,
) {
    let dpath = format!("{path}.default");
    let explicit: Option<Vec<&str>> = match q.get("default") {
        None | Some(Value::Null) => None,
        Some(Value::String(label)) => Some(vec![label.as_str()]),
        Some(Value::Array(items)) if multi => {
            let mut picked = Vec::new();
            for (k, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(label) => picked.push(label),
                    None => issues.push(Issue::new(
                        format!("{dpath}[{k}]"),
                        format!("must be a string, got {}", kind(item)),
                    )),
                }
            }
            Some(picked)
        }
        Some(Value::Array(_)) => {
            issues.push(Issue::new(
                &dpath,
                "must be one label: this question is not multiSelect",
            ));
            return;
        }
        Some(other) => {
            issues.push(Issue::new(
                &dpath,
                format!("must be a label or an array of labels, got {}", kind(other)),
            ));
            return;
        }
    };
    let Some(labels) = labels else { return };
    match explicit {
        Some(picked) => {
            for label in picked {
                if !labels.iter().any(|l| l == label) {
                    issues.push(Issue::new(
                        &dpath,
                        format!("names {label:?}, which is not one of the options"),
                    ));
                }
            }
        }
        None => {
            let recommended = labels
                .iter()
                .filter(|l| l.ends_with(RECOMMENDED_SUFFIX))
                .count();
            if recommended > 1 && !multi {
                issues.push(Issue::new(
                    format!("{path}.options"),
                    format!("{recommended} options are marked{RECOMMENDED_SUFFIX}; a single-select question has one default"),
                ));
            }
            if recommended == 0 && rules.strict_defaults {
                issues.push(Issue::new(
                    &dpath,
                    format!("is required: pre-pick an answer with \"default\" or mark an option's label{RECOMMENDED_SUFFIX}"),
                ));
            }
        }
    }
}

/// Reads a required non-empty string field.
fn required_text<'a>(
    obj: &'a Map<String, Value>,
    field: &str,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Option<&'a str> {
    let fpath = format!("{path}.{field}");
    match obj.get(field) {
        None | Some(Value::Null) => {
            issues.push(Issue::new(fpath, "is required"));
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            issues.push(Issue::new(fpath, "must not be empty"));
            None
        }
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            issues.push(Issue::new(
                fpath,
                format!("must be a string, got {}", kind(other)),
            ));
            None
        }
    }
}

/// What kind of JSON value `v` is, as an error message names it.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(text: &str, header: &str, labels: &[&str]) -> Value {
        json!({
            "question": text,
            "header": header,
            "options": labels.iter().map(|l| json!({"label": l, "description": format!("about {l}")})).collect::<Vec<_>>(),
            "multiSelect": false,
        })
    }

    fn paths(args: Value, rules: Rules) -> Vec<String> {
        validate(&args, rules)
            .unwrap_err()
            .into_iter()
            .map(|i| i.path)
            .collect()
    }

    #[test]
    fn a_well_formed_call_passes_and_keeps_its_fields() {
        let req = validate(
            &json!({"questions": [q("Which db?", "Database", &["Postgres", "SQLite"])], "metadata": {"x": 1}}),
            Rules::default(),
        )
        .unwrap();
        assert_eq!(req.questions[0].question, "Which db?");
        assert_eq!(req.questions[0].options[1].label, "SQLite");
        assert!(!req.questions[0].multi_select);
    }

    #[test]
    fn unknown_extra_fields_are_accepted() {
        let mut question = q("Which db?", "Database", &["A", "B"]);
        question["preview"] = json!("<b>x</b>");
        question["options"][0]["annotations"] = json!({"k": "v"});
        assert!(validate(&json!({"questions": [question]}), Rules::default()).is_ok());
    }

    #[test]
    fn every_issue_is_listed_with_its_path() {
        let found = paths(
            json!({"questions": [
                q("One?", "A header too long", &["A"]),
                {"question": 3, "header": "H", "options": "none", "multiSelect": "yes"},
                q("One?", "H", &["A", "B"]),
            ]}),
            Rules::default(),
        );
        assert_eq!(
            found,
            [
                "questions[0].header",
                "questions[0].options",
                "questions[1].question",
                "questions[1].multiSelect",
                "questions[1].options",
                "questions[2].question",
            ]
        );
    }

    #[test]
    fn question_count_is_bounded() {
        assert_eq!(
            paths(json!({"questions": []}), Rules::default()),
            ["questions"]
        );
        let five: Vec<Value> = (0..5)
            .map(|i| q(&format!("Q{i}?"), "H", &["A", "B"]))
            .collect();
        assert_eq!(
            paths(json!({"questions": five}), Rules::default()),
            ["questions"]
        );
        assert_eq!(paths(json!({}), Rules::default()), ["questions"]);
        assert_eq!(paths(json!([1]), Rules::default()), [""]);
    }

    #[test]
    fn header_limit_counts_characters_not_bytes() {
        let ok = q("Q?", "Überprüfung", &["A", "B"]);
        assert!(validate(&json!({"questions": [ok]}), Rules::default()).is_ok());
        let long = q("Q?", "Thirteen char", &["A", "B"]);
        let issues = validate(&json!({"questions": [long]}), Rules::default()).unwrap_err();
        assert_eq!(issues[0].path, "questions[0].header");
        assert!(
            issues[0].message.contains("got 13"),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn defaults_must_name_options_and_fit_the_shape() {
        let mut single = q("Q?", "H", &["A", "B"]);
        single["default"] = json!(["A", "B"]);
        let mut unknown = q("R?", "H", &["A", "B"]);
        unknown["default"] = json!("C");
        assert_eq!(
            paths(json!({"questions": [single, unknown]}), Rules::default()),
            ["questions[0].default", "questions[1].default"]
        );
    }

    #[test]
    fn strict_mode_requires_a_default_on_every_question() {
        let strict = Rules {
            strict_defaults: true,
        };
        let mut explicit = q("Q?", "H", &["A", "B"]);
        explicit["default"] = json!("B");
        let recommended = q("R?", "H", &["A (Recommended)", "B"]);
        let bare = q("S?", "H", &["A", "B"]);
        assert_eq!(
            paths(
                json!({"questions": [explicit.clone(), recommended.clone(), bare.clone()]}),
                strict
            ),
            ["questions[2].default"]
        );
        assert!(
            validate(
                &json!({"questions": [explicit, recommended, bare]}),
                Rules::default()
            )
            .is_ok()
        );
    }

    /// A null where serde wants a string or a boolean would pass here and
    /// then fail to deserialize with no path, so it is refused with one.
    #[test]
    fn a_null_description_or_multi_select_is_refused_with_its_path() {
        let mut question = q("Q?", "H", &["A", "B"]);
        question["options"][1]["description"] = Value::Null;
        question["multiSelect"] = Value::Null;
        let issues = validate(&json!({"questions": [question]}), Rules::default()).unwrap_err();
        let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "questions[0].multiSelect: must be a boolean, got null",
                "questions[0].options[1].description: must be a string, got null",
            ]
        );
    }

    #[test]
    fn two_recommended_options_on_a_single_select_are_ambiguous() {
        let question = q("Q?", "H", &["A (Recommended)", "B (Recommended)"]);
        assert_eq!(
            paths(json!({"questions": [question]}), Rules::default()),
            ["questions[0].options"]
        );
    }

    #[test]
    fn an_ask_too_heavy_to_travel_answered_is_refused() {
        let described = |d: usize| {
            json!({"questions": [{"question": "Q?", "header": "H", "options": [
                {"label": "A", "description": "d".repeat(d)}, {"label": "B"}]}]})
        };
        let fits = validate(&described(600 * 1024), Rules::default()).unwrap();
        assert!(fits.weight() <= MAX_ASK_BYTES);
        assert_eq!(
            paths(described(MAX_ASK_BYTES), Rules::default()),
            ["questions"]
        );
        // The question text counts thrice: its answer is keyed by it.
        let q = "q".repeat(MAX_ASK_BYTES / 3);
        let asked = json!({"questions": [{"question": q, "header": "H",
            "options": [{"label": "A"}, {"label": "B"}]}]});
        assert_eq!(paths(asked, Rules::default()), ["questions"]);
    }
}
