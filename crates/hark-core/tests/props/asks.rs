//! `validate` over arbitrary JSON and mutated valid asks: it never panics,
//! every refusal is one of its own checks (never "could not read the call"),
//! and whatever it accepts is a request that keeps AskUserQuestion's limits,
//! reads back the same, and resolves.

use std::collections::HashSet;

use hark_core::model::resolve::{Pick, Picks, resolve};
use hark_core::model::schema::{
    AskRequest, MAX_HEADER_CHARS, MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS,
    RECOMMENDED_SUFFIX,
};
use hark_core::model::validate::{Issue, Rules, validate};
use proptest::prelude::*;
use serde_json::Value;

use crate::cases;
use crate::strategies::{json, mutate, mutation, valid_ask};

/// What holds of every call the validator accepts.
fn accepted_holds(request: &AskRequest, rules: Rules) -> Result<(), TestCaseError> {
    let questions = &request.questions;
    prop_assert!((MIN_QUESTIONS..=MAX_QUESTIONS).contains(&questions.len()));
    let texts: HashSet<&str> = questions.iter().map(|q| q.question.as_str()).collect();
    prop_assert_eq!(texts.len(), questions.len(), "question texts are unique");
    for q in questions {
        prop_assert!(!q.question.trim().is_empty());
        prop_assert!(!q.header.trim().is_empty());
        prop_assert!(q.header.chars().count() <= MAX_HEADER_CHARS);
        prop_assert!((MIN_OPTIONS..=MAX_OPTIONS).contains(&q.options.len()));
        let labels: HashSet<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
        prop_assert_eq!(labels.len(), q.options.len(), "labels are unique");
        prop_assert!(labels.iter().all(|l| !l.trim().is_empty()));
        match q.default_labels() {
            Some(defaults) => {
                prop_assert!(defaults.iter().all(|d| labels.contains(d)), "{:?}", q);
                prop_assert!(q.multi_select || defaults.len() == 1, "{:?}", q);
            }
            None => prop_assert!(!rules.strict_defaults, "strict needs a default: {:?}", q),
        }
        if q.default.is_none() && !q.multi_select {
            let marked = labels.iter().filter(|l| l.ends_with(RECOMMENDED_SUFFIX));
            prop_assert!(marked.count() <= 1);
        }
    }
    // It reads back as itself.
    let again = validate(&serde_json::to_value(request).unwrap(), rules);
    prop_assert_eq!(again.as_ref(), Ok(request));
    // Nothing picked: the defaults, or refused for the questions without one.
    let all_defaulted = questions.iter().all(|q| q.default_labels().is_some());
    match resolve(request, &Picks::new()) {
        Ok(resolution) => {
            prop_assert!(all_defaulted);
            prop_assert_eq!(resolution.defaulted, texts_in_order(request));
            for q in questions {
                let default = q.default_answer();
                prop_assert_eq!(resolution.answers.get(&q.question), default.as_ref());
            }
        }
        Err(issues) => prop_assert!(!all_defaulted, "{:?}", issues),
    }
    // Each question's first option picked: always an answer.
    let first: Picks = questions
        .iter()
        .map(|q| (q.question.clone(), Pick::Label(q.options[0].label.clone())))
        .collect();
    prop_assert!(resolve(request, &first).is_ok());
    Ok(())
}

fn texts_in_order(request: &AskRequest) -> Vec<String> {
    request
        .questions
        .iter()
        .map(|q| q.question.clone())
        .collect()
}

/// What holds of every refusal.
fn refused_holds(args: &Value, issues: &[Issue]) -> Result<(), TestCaseError> {
    prop_assert!(!issues.is_empty());
    for issue in issues {
        prop_assert!(
            !issue.message.starts_with("could not read the call"),
            "a shape the checks let through: {} for {}",
            issue.message,
            args
        );
        prop_assert!(!issue.path.is_empty() || !args.is_object(), "{:?}", issue);
    }
    Ok(())
}

fn check(args: &Value, strict: bool) -> Result<(), TestCaseError> {
    let rules = Rules {
        strict_defaults: strict,
    };
    match validate(args, rules) {
        Ok(request) => accepted_holds(&request, rules),
        Err(issues) => refused_holds(args, &issues),
    }
}

proptest! {
    #![proptest_config(cases(256, 1))]

    #[test]
    fn arbitrary_json_is_refused_or_a_well_formed_request(args in json(true), strict: bool) {
        check(&args, strict)?;
        // Under a `questions` field, arbitrary JSON gets past the first check.
        check(&serde_json::json!({ "questions": args }), strict)?;
    }

    #[test]
    fn valid_asks_are_accepted(args in valid_ask()) {
        let request = validate(&args, Rules::default());
        prop_assert!(request.is_ok(), "{:?} for {}", request, args);
        check(&args, true)?;
    }

    #[test]
    fn headers_are_held_to_their_limit_in_characters(
        mut args in valid_ask(),
        header in "[A-Za-zé€ ]{0,15}",
    ) {
        let header = format!("H{header}");
        args["questions"][0]["header"] = header.clone().into();
        let fits = header.chars().count() <= MAX_HEADER_CHARS;
        let read = validate(&args, Rules::default());
        prop_assert_eq!(read.is_ok(), fits, "{:?} for {:?}", read, header);
    }

    #[test]
    fn mutated_asks_are_refused_or_well_formed(
        mut args in valid_ask(),
        mutations in prop::collection::vec(mutation(), 1..4),
        strict: bool,
    ) {
        for (at, change) in mutations {
            mutate(&mut args, at, change);
        }
        check(&args, strict)?;
    }
}
