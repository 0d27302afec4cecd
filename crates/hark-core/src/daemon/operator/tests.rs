//! The listing's bounds: a page never passes the frame cap, a clipped
//! entry is small whatever was stored, and the largest valid item,
//! answered, travels whole in one frame.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::{PAGE_BUDGET, Window};
use crate::bridge::views::ItemView;
use crate::model::ids::{ItemId, SessionId};
use crate::model::item::{Asker, Item, Outcome, Surface};
use crate::model::resolve::{Pick, Picks, resolve};
use crate::model::schema::{AskRequest, MAX_ASK_BYTES, MAX_FREE_TEXT_BYTES};
use crate::model::validate::{Rules, validate};
use crate::text::json_len;

fn item(request: AskRequest) -> Item {
    Item {
        id: ItemId(uuid::Uuid::from_u128(7)),
        session_id: SessionId::from("s".repeat(200)),
        run_id: None,
        asker: Asker {
            pid: Some(1),
            cwd: Some("/".repeat(500)),
            command: Some("c".repeat(2000)),
            client: Some("claude-code 2.0".into()),
            sub_agent: None,
            confined: false,
            host: None,
        },
        request,
        approval: None,
        created_at: SystemTime::now(),
        timeout: Duration::from_secs(60),
        parking: None,
        mirrored: false,
    }
}

/// Four multi-select questions of four options, every text as long as
/// the ask's bound lets them be.
fn heaviest() -> AskRequest {
    let ask = |d: usize| -> Value {
        let qs: Vec<Value> = (0..4)
            .map(|i| {
                let options: Vec<Value> = (0..4)
                    .map(|j| json!({"label": format!("{j}{}", "l".repeat(10_000)), "description": "d".repeat(d)}))
                    .collect();
                json!({"question": format!("{i}{}", "q".repeat(10_000)), "header": "H",
                    "multiSelect": true, "options": options})
            })
            .collect();
        json!({ "questions": qs })
    };
    // Sixteen descriptions, each counted once.
    let bare = validate(&ask(0), Rules::default()).unwrap().weight();
    let request = validate(&ask((MAX_ASK_BYTES - bare) / 16), Rules::default()).unwrap();
    assert!(request.weight() > MAX_ASK_BYTES - 16, "at the bound");
    request
}

#[test]
fn the_largest_valid_item_answered_travels_whole_in_one_frame() {
    let request = heaviest();
    let every_label: Picks = request
        .questions
        .iter()
        .map(|q| {
            let labels = q.options.iter().map(|o| o.label.clone()).collect();
            (q.question.clone(), Pick::Labels(labels))
        })
        .collect();
    let free_text: Picks = request
        .questions
        .iter()
        .map(|q| {
            let text = "\u{1}".repeat((MAX_FREE_TEXT_BYTES - 2) / 6);
            (q.question.clone(), Pick::Text { text })
        })
        .collect();
    for picks in [every_label, free_text] {
        let resolution = resolve(&request, &picks).unwrap();
        let outcome = Outcome::Answered(resolution);
        let whole = ItemView::settled(
            &item(request.clone()),
            outcome,
            Some(Surface::Cli),
            SystemTime::now(),
        );
        let weight = json_len(&whole);
        assert!(weight <= PAGE_BUDGET, "{weight} bytes");
    }
}

#[test]
fn an_entry_clipped_for_a_listing_is_small_whatever_was_stored() {
    // Control characters weigh six bytes each as JSON; lists run past an
    // ask's bounds, as only a hand-edited store could hold them.
    let vast = "\u{1}".repeat(200_000);
    let qs: Vec<Value> = (0..10)
        .map(|i| {
            let options: Vec<Value> = (0..10)
                .map(|j| json!({"label": format!("{j}{vast}"), "description": vast}))
                .collect();
            json!({"question": format!("{i}{vast}"), "header": vast, "options": options,
                "default": vec![vast.clone(); 50]})
        })
        .collect();
    let request: AskRequest = serde_json::from_value(json!({ "questions": qs })).unwrap();
    let mut stored = item(request);
    stored.session_id = SessionId::from(vast.clone());
    stored.asker.command = Some(vast.clone());
    let outcome = Outcome::Cancelled { reason: vast };
    let view = ItemView::settled(&stored, outcome, None, SystemTime::now());
    let listed = view.listed();
    assert!(listed.clipped);
    assert_eq!(listed.request.questions.len(), 4);
    assert_eq!(listed.request.questions[0].options.len(), 4);
    let weight = json_len(&listed);
    assert!(weight < PAGE_BUDGET / 2, "{weight} bytes");
    assert!(listed.session_id.as_str().ends_with("…[clipped, 195 KB]"));
}

#[test]
fn a_page_keeps_what_fits_and_says_where_the_next_starts() {
    let row = |kb: usize| "r".repeat(kb * 1024);
    let window = Window::new(Some(10), None);
    let rows = vec![row(300), row(300), row(300), row(300), row(1)];
    let (page, next) = window.fill(rows.into_iter()).unwrap();
    assert_eq!(page.len(), 3);
    assert_eq!(next, Some(13));
    assert!(page.iter().map(|r| json_len(r) + 1).sum::<usize>() <= PAGE_BUDGET);

    // All the rows there were fit: no next page.
    let (page, next) = window.fill(vec![row(1), row(1)].into_iter()).unwrap();
    assert_eq!((page.len(), next), (2, None));
    // A full read of rows may have more behind it, unless the client's
    // limit is met.
    let full = || (0..100).map(|_| row(0));
    assert_eq!(window.fill(full()).unwrap().1, Some(110));
    let limited = Window::new(Some(10), Some(100));
    assert_eq!(limited.fill(full()).unwrap().1, None);
    // An entry too large for any page is refused, never sent.
    assert!(window.fill(vec![row(1100)].into_iter()).is_err());
}
