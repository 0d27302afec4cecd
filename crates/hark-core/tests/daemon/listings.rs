//! Listings and whole items on the socket: a listing's entries are clipped
//! and marked, pages say where the next starts, and `get` returns an item
//! whole or says why not.

use hark_core::bridge::client::{Call, request};
use hark_core::bridge::wire::{ClientFrame, ErrorCode, ServerFrame};
use hark_core::model::ids::ItemId;
use hark_core::model::item::ItemFilter;
use serde_json::json;

use crate::support::{Served, ask, operator};

/// A question whose second option is described at `len` bytes.
fn described(len: usize) -> serde_json::Value {
    json!({"question": "Which one?", "header": "One", "options": [
        {"label": "A", "description": "short"},
        {"label": "B", "description": "b".repeat(len)}]})
}

#[tokio::test(start_paused = true)]
async fn a_listing_clips_and_marks_and_get_returns_the_item_whole() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let long = Call::start(&served.socket, &ask("long", described(600 * 1024)))
        .await
        .unwrap();
    let _short = Call::start(&served.socket, &ask("short", described(10)))
        .await
        .unwrap();

    let listing = ClientFrame::List {
        filter: ItemFilter::default(),
    };
    let ServerFrame::Items { items, next } = request(&served.socket, &listing).await.unwrap()
    else {
        panic!("not a listing");
    };
    assert_eq!((items.len(), next), (2, None));
    let listed = items.iter().find(|i| i.id == long.id).unwrap();
    assert!(listed.clipped);
    let description = &listed.request.questions[0].options[1].description;
    assert!(
        description.ends_with("…[clipped, 600 KB]"),
        "{}",
        &description[990..]
    );
    let short = items.iter().find(|i| i.id != long.id).unwrap();
    assert!(!short.clipped);
    assert_eq!(
        short.request.questions[0].options[1].description,
        "b".repeat(10)
    );

    let got = request(&served.socket, &ClientFrame::Get { id: long.id }).await;
    let Ok(ServerFrame::Item { item }) = got else {
        panic!("{got:?}");
    };
    assert!(!item.clipped);
    assert!(item.request.questions[0].options[1].description == "b".repeat(600 * 1024));

    // A limit met is the end of the listing; one not met may go on.
    let one = ClientFrame::List {
        filter: ItemFilter {
            limit: Some(1),
            ..ItemFilter::default()
        },
    };
    let ServerFrame::Items { items, next } = request(&served.socket, &one).await.unwrap() else {
        panic!("not a listing");
    };
    assert_eq!((items.len(), next), (1, None));
}

#[tokio::test(start_paused = true)]
async fn get_of_an_unknown_id_is_not_found() {
    let served = Served::start(operator().0);
    let id = ItemId(uuid::Uuid::from_u128(42));
    let got = request(&served.socket, &ClientFrame::Get { id })
        .await
        .unwrap();
    let ServerFrame::Error(refusal) = got else {
        panic!("{got:?}");
    };
    assert_eq!(refusal.code, ErrorCode::NotFound);
    assert!(
        refusal.message.contains(&id.to_string()),
        "{}",
        refusal.message
    );
}
