//! Every daemon's record at the end: `hark inbox --all --json`, item by
//! item, against what was asked and who answered it.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::round::{Round, asker_answerer, label, parse_question, question};
use super::team::Host;
use crate::inbox::listing::{self, ListingError};
use crate::logs::log_file;
use crate::rpc::wait_until;

/// How long `hark inbox --all --json` may take.
const LIST_PATIENCE: Duration = Duration::from_secs(30);

/// What one daemon's inbox holds of the round.
#[derive(Debug, Default)]
pub struct StoreCheck {
    pub host: String,
    /// The round checked.
    pub round: &'static str,
    /// Items of the round listed (ours, by their question).
    pub items: usize,
    /// Asks listed exactly once.
    pub once: usize,
    /// Answered with exactly the label picked, under the asker's id.
    pub right: usize,
    /// Recorded as replied from where it was: `cli` on the answering host,
    /// `hub` on every other.
    pub replied_right: usize,
    /// Why it could not be listed, as the report shows it.
    pub error: Option<String>,
}

impl StoreCheck {
    /// Every ask once, answered right, and by the right surface.
    pub fn sound(&self, asks: usize) -> bool {
        self.error.is_none()
            && self.items == asks
            && self.once == asks
            && self.right == asks
            && self.replied_right == asks
    }

    /// Counts what `items` hold of `round`.
    fn count(&mut self, items: &[Value], index: usize, hosts: usize, round: &Round) {
        let mut count: HashMap<usize, usize> = HashMap::new();
        for item in items {
            let Some(i) = item
                .pointer("/request/questions/0/question")
                .and_then(Value::as_str)
                .and_then(|text| parse_question(round.label, text))
                .filter(|&i| i < round.asks)
            else {
                continue;
            };
            self.items += 1;
            *count.entry(i).or_default() += 1;
            let answered = item.pointer("/outcome/outcome") == Some(&json!("answered"))
                && item.pointer("/outcome/answers")
                    == Some(&json!({ question(round.label, i): label(i) }));
            let same_id = item["id"].as_str() == round.ids[i].as_deref();
            if answered && same_id {
                self.right += 1;
            }
            let (_, answerer) = asker_answerer(i, hosts);
            let by = if answerer == index { "cli" } else { "hub" };
            if item["replied_by"] == by {
                self.replied_right += 1;
            }
        }
        self.once = count.values().filter(|&&n| n == 1).count();
    }
}

/// Checks `host`'s inbox (host number `index` of `hosts`), listed once,
/// against each of `rounds`.
pub fn store(host: &Host, index: usize, hosts: usize, rounds: &[&Round]) -> Vec<StoreCheck> {
    let listed = list_all(host).map_err(|e| hark_harness::Report(&e).to_string());
    rounds
        .iter()
        .map(|round| {
            let mut check = StoreCheck {
                host: host.name.clone(),
                round: round.label,
                ..StoreCheck::default()
            };
            match &listed {
                Ok(items) => check.count(items, index, hosts, round),
                Err(e) => check.error = Some(e.clone()),
            }
            check
        })
        .collect()
}

/// What `hark inbox --all --json` lists on `host`.
fn list_all(host: &Host) -> Result<Vec<Value>, ListingError> {
    let out = host.sandbox.path("inbox-all.json");
    let err = host.sandbox.path("inbox-all.stderr");
    let mut child = host
        .sandbox
        .hark(["inbox", "--all", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file(&out)?))
        .stderr(Stdio::from(log_file(&err)?))
        .spawn()
        .map_err(ListingError::Spawn)?;
    let status = wait_until(&mut child, Instant::now() + LIST_PATIENCE);
    let text = listing::output(status, LIST_PATIENCE, &out, &err)?;
    listing::items(&text)
}
