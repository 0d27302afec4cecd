//! What the properties are fed: arbitrary JSON (with the ask's own field
//! names among its keys, so it reaches past the first checks), valid asks,
//! and mutations of them.

use hark_core::model::schema::{MAX_HEADER_CHARS, RECOMMENDED_SUFFIX};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The field names an ask call has, so arbitrary objects often look like one.
const FIELDS: [&str; 8] = [
    "questions",
    "question",
    "header",
    "options",
    "label",
    "description",
    "multiSelect",
    "default",
];

/// A string: often short and plain, sometimes around the header limit, any
/// Unicode, empty, blank, or marked recommended.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Za-z]{1,8}",
        // Around the header's limit.
        1 => "[A-Za-z]{11,14}",
        2 => any::<String>(),
        1 => Just(String::new()),
        1 => "[ \t\n]{1,3}",
        1 => "[A-Z]{1,3}".prop_map(|l| format!("{l}{RECOMMENDED_SUFFIX}")),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(&FIELDS[..]).prop_map(str::to_owned),
        1 => text(),
    ]
}

/// Any JSON value; `floats` says whether numbers may be fractional (a
/// round trip through text may move a float's last digit).
pub fn json(floats: bool) -> impl Strategy<Value = Value> {
    let number = if floats {
        any::<f64>()
            .prop_filter_map("finite", |f| {
                serde_json::Number::from_f64(f).map(Value::Number)
            })
            .boxed()
    } else {
        any::<i64>().prop_map(Value::from).boxed()
    };
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        number,
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A header of at most [`MAX_HEADER_CHARS`] characters.
fn header() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z ]{0,11}".prop_map(|h| format!("H{h}")),
        "[äöü€日本]{1,12}",
    ]
    .prop_filter("fits", |h| h.chars().count() <= MAX_HEADER_CHARS)
}

/// How a question's default is given.
#[derive(Debug, Clone)]
enum Default {
    None,
    /// The option at this index is marked ` (Recommended)`.
    Recommended(usize),
    /// An explicit `default`, the options at these indexes.
    Explicit(Vec<usize>),
}

fn question(index: usize) -> impl Strategy<Value = Value> {
    let labels = prop::collection::btree_set("[A-Za-z][A-Za-z ]{0,6}", 2..=4);
    (labels, any::<bool>(), any::<prop::sample::Index>(), 0..3u8)
        .prop_flat_map(move |(labels, multi, at, how)| {
            let labels: Vec<String> = labels.into_iter().collect();
            let n = labels.len();
            let default = match how {
                0 => Just(Default::None).boxed(),
                1 => Just(Default::Recommended(at.index(n))).boxed(),
                _ if multi => proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n)
                    .prop_map(Default::Explicit)
                    .boxed(),
                _ => Just(Default::Explicit(vec![at.index(n)])).boxed(),
            };
            let extra = proptest::option::weighted(0.2, json(true));
            (Just(labels), Just(multi), default, header(), extra)
        })
        .prop_map(move |(mut labels, multi, default, header, extra)| {
            let mut q = json!({
                "question": format!("Question {index}?"),
                "header": header,
                "multiSelect": multi,
            });
            match default {
                Default::None => {}
                Default::Recommended(i) => labels[i].push_str(RECOMMENDED_SUFFIX),
                Default::Explicit(picked) if multi => {
                    q["default"] = json!(picked.iter().map(|&i| &labels[i]).collect::<Vec<_>>());
                }
                Default::Explicit(picked) => q["default"] = json!(labels[picked[0]]),
            }
            q["options"] = labels
                .iter()
                .map(|l| json!({"label": l, "description": format!("about {l}")}))
                .collect();
            // A newer client's extra field is accepted and ignored.
            if let Some(extra) = extra {
                q["x-extra"] = extra;
            }
            q
        })
}

/// A valid ask call: one to four questions, each with two to four options.
pub fn valid_ask() -> impl Strategy<Value = Value> {
    (1..=4usize)
        .prop_flat_map(|n| (0..n).map(question).collect::<Vec<_>>())
        .prop_map(|questions| json!({ "questions": questions }))
}

/// One change to a value somewhere inside a JSON document.
#[derive(Debug, Clone)]
pub enum Mutation {
    Replace(Value),
    Remove,
    /// An array's element twice, or an object's field under a second name.
    Duplicate,
    Insert(String, Value),
}

pub fn mutation() -> impl Strategy<Value = (prop::sample::Index, Mutation)> {
    let change = prop_oneof![
        2 => json(true).prop_map(Mutation::Replace),
        2 => text().prop_map(|t| Mutation::Replace(Value::from(t))),
        2 => Just(Mutation::Remove),
        1 => Just(Mutation::Duplicate),
        1 => (key(), json(true)).prop_map(|(k, v)| Mutation::Insert(k, v)),
    ];
    (any::<prop::sample::Index>(), change)
}

/// Every node's JSON pointer, the root's ("") first.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Applies `mutation` at the node `at` picks.
pub fn mutate(value: &mut Value, at: prop::sample::Index, mutation: Mutation) {
    let mut all = Vec::new();
    pointers(value, String::new(), &mut all);
    let pointer = all[at.index(all.len())].clone();
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", ""));
    let key = last.replace("~1", "/").replace("~0", "~");
    match mutation {
        Mutation::Replace(new) => *value.pointer_mut(&pointer).unwrap() = new,
        Mutation::Insert(k, v) => match value.pointer_mut(&pointer).unwrap() {
            Value::Object(fields) => drop(fields.insert(k, v)),
            Value::Array(items) => items.push(v),
            other => *other = Value::Object(Map::from_iter([(k, v)])),
        },
        Mutation::Remove | Mutation::Duplicate if pointer.is_empty() => *value = Value::Null,
        Mutation::Remove => match value.pointer_mut(parent).unwrap() {
            Value::Object(fields) => drop(fields.remove(&key)),
            Value::Array(items) => drop(items.remove(key.parse::<usize>().unwrap())),
            _ => unreachable!("a parent is an object or an array"),
        },
        Mutation::Duplicate => match value.pointer_mut(parent).unwrap() {
            Value::Object(fields) => {
                let copy = fields[&key].clone();
                fields.insert(format!("{key}2"), copy);
            }
            Value::Array(items) => {
                let i = key.parse::<usize>().unwrap();
                items.insert(i, items[i].clone());
            }
            _ => unreachable!("a parent is an object or an array"),
        },
    }
}
