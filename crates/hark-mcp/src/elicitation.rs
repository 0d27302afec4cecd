//! AskUserQuestion's questions as an MCP elicitation form, and the form's
//! content back as the operator's picks — what `hark mcp-studio` puts to a
//! driving client that advertises `elicitation` (issue 15).
//!
//! The form depends on the protocol revision the client negotiated:
//!
//! - **2025-06-18** allows flat primitives only, with a `default` on
//!   booleans alone: a single-select question is one `enum` property (the
//!   option labels, `enumNames` the same); a multi-select one is a boolean
//!   per option (the pre-picked ones `default: true`); option descriptions
//!   go into the question's description.
//! - **2025-11-25** (and **2026-07-28**, which carries the same request as
//!   an input-required result) has labelled options: a single-select
//!   question is `oneOf` of `{const, title}`, a multi-select one is
//!   `type: array` with `items.enum`, and `default` is the pre-picked
//!   option (or options).
//!
//! Every question also gets `qN_other`, a string for "Other", as every
//! hark surface offers free text. Earlier revisions have no elicitation.
//! Properties are keyed `q1`…`q4` in the questions' order.

use hark_core::model::resolve::{Pick, Picks};
use hark_core::model::schema::Question;
use rmcp::model::{ElicitationSchema, ProtocolVersion};
use serde_json::{Map, Value, json};

/// The shape of form a protocol revision allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// 2025-06-18: flat primitives.
    Flat,
    /// 2025-11-25 and later: labelled options, arrays, defaults.
    Labelled,
}

impl Form {
    /// The form for a negotiated revision; `None` before elicitation existed.
    pub fn for_version(version: &ProtocolVersion) -> Option<Form> {
        let v = version.as_str();
        if v >= ProtocolVersion::V_2025_11_25.as_str() {
            Some(Form::Labelled)
        } else if v >= ProtocolVersion::V_2025_06_18.as_str() {
            Some(Form::Flat)
        } else {
            None
        }
    }
}

/// The property of question `index` (0-based), and of its "Other" text.
fn key(index: usize) -> String {
    format!("q{}", index + 1)
}

fn other_key(index: usize) -> String {
    format!("q{}_other", index + 1)
}

/// The flat form's property of option `option` of a multi-select question.
fn option_key(index: usize, option: usize) -> String {
    format!("q{}_{}", index + 1, option + 1)
}

/// An option's title: its label, and its description after a dash.
fn option_title(label: &str, description: &str) -> String {
    if description.is_empty() {
        label.to_owned()
    } else {
        format!("{label} — {description}")
    }
}

/// The requested schema, as JSON (exactly what goes on the wire).
pub fn schema_json(questions: &[Question], form: Form) -> Value {
    let mut properties = Map::new();
    for (i, q) in questions.iter().enumerate() {
        let defaults: Vec<&str> = q.default_labels().unwrap_or_default();
        let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
        match (form, q.multi_select) {
            (Form::Flat, false) => {
                let described: Vec<String> = q
                    .options
                    .iter()
                    .filter(|o| !o.description.is_empty())
                    .map(|o| format!("{}: {}", o.label, o.description))
                    .collect();
                let description = if described.is_empty() {
                    q.question.clone()
                } else {
                    format!("{}\n{}", q.question, described.join("\n"))
                };
                properties.insert(
                    key(i),
                    json!({"type": "string", "title": q.header, "description": description,
                        "enum": labels, "enumNames": labels}),
                );
            }
            (Form::Flat, true) => {
                for (j, o) in q.options.iter().enumerate() {
                    let mut option = json!({"type": "boolean", "title": format!("{}: {}", q.header, o.label),
                        "default": defaults.contains(&o.label.as_str())});
                    let description = if o.description.is_empty() {
                        q.question.clone()
                    } else {
                        format!("{} — {}", q.question, o.description)
                    };
                    option["description"] = json!(description);
                    properties.insert(option_key(i, j), option);
                }
            }
            (Form::Labelled, false) => {
                let one_of: Vec<Value> = q
                    .options
                    .iter()
                    .map(|o| json!({"const": o.label, "title": option_title(&o.label, &o.description)}))
                    .collect();
                let mut property = json!({"type": "string", "title": q.header,
                    "description": q.question, "oneOf": one_of});
                if let Some(first) = defaults.first() {
                    property["default"] = json!(first);
                }
                properties.insert(key(i), property);
            }
            (Form::Labelled, true) => {
                let mut property = json!({"type": "array", "title": q.header, "description": q.question,
                    "items": {"type": "string", "enum": labels}});
                if !defaults.is_empty() {
                    property["default"] = json!(defaults);
                }
                properties.insert(key(i), property);
            }
        }
        properties.insert(
            other_key(i),
            json!({"type": "string", "title": format!("{}: Other", q.header),
                "description": format!("Your own answer to \"{}\", instead of the options", q.question)}),
        );
    }
    json!({"type": "object", "properties": properties})
}

/// The requested schema as rmcp sends it.
pub fn schema(questions: &[Question], form: Form) -> Result<ElicitationSchema, serde_json::Error> {
    serde_json::from_value(schema_json(questions, form))
}

/// The elicitation's message: who asks, about what, where (the client must
/// show who is asking).
pub fn message(attribution: &str, questions: &[Question]) -> String {
    let asked: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
    format!("{attribution} asks: {}", asked.join(" · "))
}

/// Why an accepted form's content does not read as the operator's picks:
/// the property it is about, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PicksError {
    #[error("{property} must be text")]
    OtherNotText { property: String },
    #[error("{property}: a label must be text")]
    LabelNotText { property: String },
    #[error("{property}: {label:?} is not one of its options")]
    NotAnOption { property: String, label: String },
    #[error("{property} must be true or false")]
    NotABoolean { property: String },
    #[error("{property}: the picks must be a list")]
    NotAList { property: String },
}

/// The accepted form's content as the operator's picks. A question whose
/// fields are all absent is left out (it takes its default); a label no
/// option has, or a field of the wrong type, is refused.
pub fn picks(
    questions: &[Question],
    form: Form,
    content: &Map<String, Value>,
) -> Result<Picks, PicksError> {
    let mut picks = Picks::new();
    for (i, q) in questions.iter().enumerate() {
        let pick = match other_text(i, content)? {
            Some(text) => Some(Pick::Text { text }),
            None => pick_of(i, q, form, content)?,
        };
        if let Some(pick) = pick {
            picks.insert(q.question.clone(), pick);
        }
    }
    Ok(picks)
}

/// Question `i`'s "Other" text, when the operator wrote one.
fn other_text(i: usize, content: &Map<String, Value>) -> Result<Option<String>, PicksError> {
    let Some(text) = content.get(&other_key(i)) else {
        return Ok(None);
    };
    let text = text.as_str().ok_or_else(|| PicksError::OtherNotText {
        property: other_key(i),
    })?;
    Ok((!text.trim().is_empty()).then(|| text.to_owned()))
}

/// Question `i`'s picked option (or options), `None` when its fields are
/// all absent.
fn pick_of(
    i: usize,
    q: &Question,
    form: Form,
    content: &Map<String, Value>,
) -> Result<Option<Pick>, PicksError> {
    let label_of = |value: &Value| -> Result<String, PicksError> {
        let label = value
            .as_str()
            .ok_or_else(|| PicksError::LabelNotText { property: key(i) })?;
        q.options
            .iter()
            .any(|o| o.label == label)
            .then(|| label.to_owned())
            .ok_or_else(|| PicksError::NotAnOption {
                property: key(i),
                label: label.to_owned(),
            })
    };
    Ok(match (form, q.multi_select) {
        (Form::Flat, true) => {
            let mut chosen = Vec::new();
            let mut any = false;
            for (j, o) in q.options.iter().enumerate() {
                match content.get(&option_key(i, j)) {
                    None => {}
                    Some(Value::Bool(on)) => {
                        any = true;
                        if *on {
                            chosen.push(o.label.clone());
                        }
                    }
                    Some(_) => {
                        return Err(PicksError::NotABoolean {
                            property: option_key(i, j),
                        });
                    }
                }
            }
            any.then_some(Pick::Labels(chosen))
        }
        (Form::Labelled, true) => match content.get(&key(i)) {
            None => None,
            Some(Value::Array(values)) => Some(Pick::Labels(
                values.iter().map(label_of).collect::<Result<_, _>>()?,
            )),
            Some(_) => return Err(PicksError::NotAList { property: key(i) }),
        },
        (_, false) => content
            .get(&key(i))
            .map(label_of)
            .transpose()?
            .map(Pick::Label),
    })
}

#[cfg(test)]
mod tests;
