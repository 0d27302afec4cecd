//! `resolve` over valid asks and arbitrary picks: it never panics, accepts
//! exactly the picks a careful reading of AskUserQuestion allows, and what
//! it resolves names only offered labels (or the operator's free text), one
//! for a single-select question, an array for a multiSelect one.

use hark_core::model::resolve::{Pick, Picks, resolve};
use hark_core::model::schema::{AnswerValue, AskRequest, Question};
use hark_core::model::validate::{Rules, validate};
use proptest::prelude::*;

use crate::cases;
use crate::strategies::{text, valid_ask};

/// A pick for `q`: mostly of its own labels, sometimes of none of them.
fn pick(q: &Question) -> impl Strategy<Value = Pick> + use<> {
    let labels: Vec<String> = q.options.iter().map(|o| o.label.clone()).collect();
    let some_label = prop_oneof![
        4 => proptest::sample::select(labels.clone()),
        1 => text(),
    ];
    prop_oneof![
        3 => some_label.clone().prop_map(Pick::Label),
        3 => prop::collection::vec(some_label, 0..=5).prop_map(Pick::Labels),
        2 => text().prop_map(|text| Pick::Text { text }),
    ]
}

/// A request and picks for it: some questions left out, some picked, and
/// now and then a question it does not have.
fn request_and_picks() -> impl Strategy<Value = (AskRequest, Picks)> {
    valid_ask()
        .prop_map(|args| validate(&args, Rules::default()).expect("a valid ask"))
        .prop_flat_map(|request| {
            let picks: Vec<_> = request
                .questions
                .iter()
                .map(|q| proptest::option::of((Just(q.question.clone()), pick(q))))
                .collect();
            let stranger = proptest::option::weighted(0.1, (text(), pick(&request.questions[0])));
            (Just(request), picks, stranger)
        })
        .prop_map(|(request, picks, stranger)| {
            let picks = picks.into_iter().flatten().chain(stranger).collect();
            (request, picks)
        })
}

/// Whether `picks` are a whole, well-formed answer to `request`, read
/// straight from the rules (not from the resolver's code).
fn allowed(request: &AskRequest, picks: &Picks) -> bool {
    let known = picks.keys().all(|text| request.question(text).is_some());
    known
        && request
            .questions
            .iter()
            .all(|q| match picks.get(&q.question) {
                None => q.default_labels().is_some(),
                Some(Pick::Text { text }) => !text.trim().is_empty(),
                Some(Pick::Label(label)) => q.has_option(label),
                Some(Pick::Labels(labels)) => {
                    labels.iter().all(|l| q.has_option(l)) && (q.multi_select || labels.len() == 1)
                }
            })
}

proptest! {
    #![proptest_config(cases(256, 1))]

    #[test]
    fn resolved_answers_name_only_what_was_offered_or_typed(
        (request, picks) in request_and_picks()
    ) {
        let resolved = resolve(&request, &picks);
        prop_assert_eq!(resolved.is_ok(), allowed(&request, &picks), "{:?} for {:?}", resolved, picks);
        let Ok(resolution) = resolved else { return Ok(()) };
        prop_assert_eq!(resolution.answers.len(), request.questions.len());
        for q in &request.questions {
            let answer = &resolution.answers[&q.question];
            let given: Vec<&String> = match answer {
                AnswerValue::One(label) => {
                    prop_assert!(!q.multi_select, "a multiSelect answer is an array");
                    vec![label]
                }
                AnswerValue::Many(labels) => {
                    prop_assert!(q.multi_select || labels.len() != 1, "one label is not an array");
                    labels.iter().collect()
                }
            };
            match picks.get(&q.question) {
                None => {
                    prop_assert!(resolution.defaulted.contains(&q.question));
                    let default = q.default_answer();
                    prop_assert_eq!(Some(answer), default.as_ref());
                }
                Some(Pick::Text { text }) => prop_assert_eq!(&given, &vec![text]),
                Some(Pick::Label(label)) => prop_assert_eq!(&given, &vec![label]),
                Some(Pick::Labels(labels)) => {
                    // Each label once, in the order first named.
                    let mut once: Vec<&String> = Vec::new();
                    for label in labels {
                        if !once.contains(&label) {
                            once.push(label);
                        }
                    }
                    prop_assert_eq!(&given, &once);
                }
            }
            if picks.contains_key(&q.question) {
                prop_assert!(!resolution.defaulted.contains(&q.question));
            }
            let typed = matches!(picks.get(&q.question), Some(Pick::Text { .. }));
            prop_assert!(typed || given.iter().all(|l| q.has_option(l)), "{:?}", answer);
            prop_assert!(q.multi_select || given.len() == 1, "{:?}", answer);
        }
    }
}
