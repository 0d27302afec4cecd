//! The store's health, as commands warn of it. A daemon whose store refuses
//! writes (a full disk) keeps serving from memory; the operator is told
//! here, before the listing, so nothing it holds is lost unseen.

use std::path::Path;

use serde_json::json;

use hark_core::bridge::client;
use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::registry::StoreHealth;
use hark_core::text::visible;

/// Warns on stderr when the daemon's store is failing: in words, or with
/// `json` as one JSON object (stdout keeps its one value for scripts).
/// Says nothing when it is healthy, or cannot be asked.
pub async fn warn_if_failing(socket: &Path, json: bool) {
    let Ok(ServerFrame::Status {
        store: Some(health),
    }) = client::request(socket, &ClientFrame::Status).await
    else {
        return;
    };
    if !health.is_failing() {
        return;
    }
    if json {
        eprintln!("{}", json!({"warning": "store_failing", "store": health}));
    } else {
        eprintln!("{}", warning(&health));
    }
}

/// The warning, in words.
fn warning(health: &StoreHealth) -> String {
    let path = visible(&health.path.display().to_string());
    let error = visible(health.error.as_deref().unwrap_or_default());
    let dir = health
        .path
        .parent()
        .map(|d| visible(&d.display().to_string()))
        .unwrap_or_default();
    format!(
        "hark: warning: the store {path} cannot be written: {error}\n\
         hark: {} item write(s) are held in memory only: every item is still listed and can be answered, \
         but what is held is lost if hark stops before the store takes writes again\n\
         hint: free space on the disk that holds {dir}; hark records what it holds as soon as it can",
        health.unrecorded
    )
}
