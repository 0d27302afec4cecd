//! The exact forms per protocol revision, and the content read back.

use super::*;

/// One single-select question with a recommended option (the default) and
/// descriptions, one multi-select with an explicit default.
fn questions() -> Vec<Question> {
    serde_json::from_value(json!([
        {"question": "Which database?", "header": "Database", "multiSelect": false, "options": [
            {"label": "Postgres (Recommended)", "description": "a server"},
            {"label": "SQLite", "description": "one file"}]},
        {"question": "Which features ship first?", "header": "Features", "multiSelect": true,
         "default": ["Auth"], "options": [
            {"label": "Auth", "description": ""},
            {"label": "Search", "description": "full text"}]}
    ]))
    .unwrap()
}

#[test]
fn each_revision_gets_its_own_form() {
    let v = |s: &str| serde_json::from_value::<ProtocolVersion>(json!(s)).unwrap();
    assert_eq!(Form::for_version(&ProtocolVersion::V_2024_11_05), None);
    assert_eq!(Form::for_version(&ProtocolVersion::V_2025_03_26), None);
    assert_eq!(
        Form::for_version(&ProtocolVersion::V_2025_06_18),
        Some(Form::Flat)
    );
    assert_eq!(
        Form::for_version(&ProtocolVersion::V_2025_11_25),
        Some(Form::Labelled)
    );
    assert_eq!(
        Form::for_version(&ProtocolVersion::V_2026_07_28),
        Some(Form::Labelled)
    );
    assert_eq!(Form::for_version(&v("2025-07-01")), Some(Form::Flat));
}

#[test]
fn the_2025_06_18_form_is_flat_primitives_with_boolean_defaults() {
    let form = schema_json(&questions(), Form::Flat);
    assert_eq!(
        form,
        json!({"type": "object", "properties": {
            "q1": {"type": "string", "title": "Database",
                   "description": "Which database?\nPostgres (Recommended): a server\nSQLite: one file",
                   "enum": ["Postgres (Recommended)", "SQLite"],
                   "enumNames": ["Postgres (Recommended)", "SQLite"]},
            "q1_other": {"type": "string", "title": "Database: Other",
                         "description": "Your own answer to \"Which database?\", instead of the options"},
            "q2_1": {"type": "boolean", "title": "Features: Auth", "default": true,
                     "description": "Which features ship first?"},
            "q2_2": {"type": "boolean", "title": "Features: Search", "default": false,
                     "description": "Which features ship first? — full text"},
            "q2_other": {"type": "string", "title": "Features: Other",
                         "description": "Your own answer to \"Which features ship first?\", instead of the options"}
        }})
    );
    let sent =
        serde_json::to_value(schema(&questions(), Form::Flat).expect("rmcp takes it")).unwrap();
    assert_eq!(sent, form, "rmcp sends it as built");
}

#[test]
fn the_2025_11_25_form_labels_options_with_one_of_and_arrays_and_defaults() {
    let form = schema_json(&questions(), Form::Labelled);
    assert_eq!(
        form,
        json!({"type": "object", "properties": {
            "q1": {"type": "string", "title": "Database", "description": "Which database?",
                   "oneOf": [{"const": "Postgres (Recommended)", "title": "Postgres (Recommended) — a server"},
                             {"const": "SQLite", "title": "SQLite — one file"}],
                   "default": "Postgres (Recommended)"},
            "q1_other": {"type": "string", "title": "Database: Other",
                         "description": "Your own answer to \"Which database?\", instead of the options"},
            "q2": {"type": "array", "title": "Features", "description": "Which features ship first?",
                   "items": {"type": "string", "enum": ["Auth", "Search"]}, "default": ["Auth"]},
            "q2_other": {"type": "string", "title": "Features: Other",
                         "description": "Your own answer to \"Which features ship first?\", instead of the options"}
        }})
    );
    let sent =
        serde_json::to_value(schema(&questions(), Form::Labelled).expect("rmcp takes it")).unwrap();
    assert_eq!(sent, form, "rmcp sends it as built");
}

#[test]
fn the_content_comes_back_as_picks_and_bad_content_is_refused() {
    let qs = questions();
    let content = |v: Value| v.as_object().unwrap().clone();
    let labelled = picks(
        &qs,
        Form::Labelled,
        &content(json!({"q1": "SQLite", "q2": ["Auth", "Search"]})),
    )
    .unwrap();
    assert_eq!(labelled["Which database?"], Pick::Label("SQLite".into()));
    assert_eq!(
        labelled["Which features ship first?"],
        Pick::Labels(vec!["Auth".into(), "Search".into()])
    );

    let flat = picks(
        &qs,
        Form::Flat,
        &content(json!({"q2_1": false, "q2_2": true, "q1_other": "DuckDB"})),
    )
    .unwrap();
    assert_eq!(
        flat["Which database?"],
        Pick::Text {
            text: "DuckDB".into()
        }
    );
    assert_eq!(
        flat["Which features ship first?"],
        Pick::Labels(vec!["Search".into()])
    );

    let empty = picks(&qs, Form::Labelled, &content(json!({"q1_other": "  "}))).unwrap();
    assert!(empty.is_empty(), "left out: the defaults stand");

    let unknown = picks(&qs, Form::Labelled, &content(json!({"q1": "MySQL"}))).unwrap_err();
    assert_eq!(
        unknown,
        PicksError::NotAnOption {
            property: "q1".into(),
            label: "MySQL".into()
        }
    );
    assert_eq!(
        unknown.to_string(),
        "q1: \"MySQL\" is not one of its options"
    );
    assert_eq!(
        picks(&qs, Form::Labelled, &content(json!({"q2": "Auth"}))),
        Err(PicksError::NotAList {
            property: "q2".into()
        })
    );
    assert_eq!(
        picks(&qs, Form::Flat, &content(json!({"q2_1": "yes"}))),
        Err(PicksError::NotABoolean {
            property: "q2_1".into()
        })
    );
    assert_eq!(
        picks(&qs, Form::Labelled, &content(json!({"q1_other": 7}))),
        Err(PicksError::OtherNotText {
            property: "q1_other".into()
        })
    );
}

#[test]
fn the_message_says_who_asks_and_what() {
    assert_eq!(
        message("claude in api · session s1", &questions()),
        "claude in api · session s1 asks: Which database? · Which features ship first?"
    );
}
