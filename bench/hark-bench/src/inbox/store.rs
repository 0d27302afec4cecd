//! The store's view at the end: `hark inbox --all --json`, checked item by item.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::Instant;

use hark_harness::Sandbox;
use serde_json::{Value, json};

use super::listing::{self, ListingError, Run};
use super::results::StoreCheck;
use super::{RUN_TIMEOUT, label, parse_question, question};
use crate::logs::log_file;
use crate::rpc::wait_until;

/// Why the store's view was not checked.
#[derive(Debug, thiserror::Error)]
pub enum Unchecked {
    #[error("not checked: the run was aborted")]
    Aborted,
    #[error("hark inbox --all --json failed")]
    Listing(#[from] ListingError),
}

/// Lists the whole inbox (`hark inbox --all --json`) and checks it.
pub(super) fn check_store(sandbox: &Sandbox, clients: usize, per_client: usize) -> StoreCheck {
    let text = match list_all(sandbox) {
        Ok(text) => text,
        Err(e) => {
            return StoreCheck {
                error: Some(e.into()),
                ..StoreCheck::default()
            };
        }
    };
    let mut check = match listing::items(&text) {
        Ok(items) => check_items(&items, clients, per_client),
        Err(e) => StoreCheck {
            error: Some(e.into()),
            ..StoreCheck::default()
        },
    };
    check.bytes = text.len();
    check
}

/// What `hark inbox --all --json` printed.
fn list_all(sandbox: &Sandbox) -> Result<String, ListingError> {
    let out = sandbox.path("inbox-all.json");
    let err = sandbox.path("inbox-all.stderr");
    let mut run = Run {
        child: sandbox
            .hark(["inbox", "--all", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file(&out)?))
            .stderr(Stdio::from(log_file(&err)?))
            .spawn()
            .map_err(ListingError::Spawn)?,
        started: Instant::now(),
    };
    let status = wait_until(&mut run.child, Instant::now() + RUN_TIMEOUT);
    listing::output(status, RUN_TIMEOUT, &out, &err)
}

/// Checks every item listed against what the clients asked.
fn check_items(items: &[Value], clients: usize, per_client: usize) -> StoreCheck {
    let mut check = StoreCheck {
        items: items.len(),
        ..StoreCheck::default()
    };
    let mut ids = HashSet::new();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for item in items {
        if let Some(id) = item.get("id").and_then(Value::as_str) {
            ids.insert(id.to_owned());
        }
        let outcome = item
            .pointer("/outcome/outcome")
            .and_then(Value::as_str)
            .unwrap_or("pending");
        *check.outcomes.entry(outcome.to_owned()).or_default() += 1;
        let by_cli = item.get("replied_by").and_then(Value::as_str) == Some("cli");
        if outcome == "answered" && by_cli {
            check.answered_by_cli += 1;
        }
        let asked = item
            .pointer("/request/questions/0/question")
            .and_then(Value::as_str)
            .and_then(parse_question)
            .filter(|&(c, i)| c < clients && i < per_client);
        if let Some((c, i)) = asked {
            *seen.entry((c, i)).or_default() += 1;
            let session_ok =
                item.get("session_id").and_then(Value::as_str) == Some(&format!("client-{c}"));
            let answers = item.pointer("/outcome/answers");
            if session_ok && answers == Some(&json!({ question(c, i): label(c, i) })) {
                check.right_answers += 1;
            }
        }
    }
    check.unique_ids = ids.len();
    check.questions_once = seen.values().filter(|&&n| n == 1).count();
    check
}
