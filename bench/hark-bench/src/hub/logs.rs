//! The daemons' events for a round: JSON log lines (`--log-format json`),
//! each with the `timestamp` it was logged at, read from a line on.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use hark_harness::{Line, Lines, WaitError};
use serde_json::Value;

/// One event of one item, as a daemon logged it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub question_id: String,
    /// When it was logged (else when its line was read).
    pub at: SystemTime,
}

/// Waits until `log`, from line `from` on, has a `message` event for each
/// of `keys` (the value of its field `key`), for at most `patience`: the
/// first of each.
pub fn wait_keyed(
    log: &Lines,
    from: usize,
    message: &str,
    key: &str,
    keys: &HashSet<String>,
    patience: Duration,
) -> Result<HashMap<String, Seen>, WaitError> {
    let mut found = HashMap::new();
    let mut cursor = from;
    let what = format!("{message} events for {} items", keys.len());
    log.wait(&what, patience, |lines| {
        take(
            &lines[cursor.min(lines.len())..],
            message,
            key,
            keys,
            &mut found,
        );
        cursor = lines.len();
        (found.len() == keys.len()).then(|| found.clone())
    })
}

/// Like [`wait_keyed`], but only what is there already.
pub fn find_keyed(
    log: &Lines,
    from: usize,
    message: &str,
    key: &str,
    keys: &HashSet<String>,
) -> HashMap<String, Seen> {
    let mut found = HashMap::new();
    take(&log.since(from), message, key, keys, &mut found);
    found
}

fn take(
    lines: &[Line],
    message: &str,
    key: &str,
    keys: &HashSet<String>,
    found: &mut HashMap<String, Seen>,
) {
    for line in lines {
        if !line.text.contains(message) {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(&line.text) else {
            continue;
        };
        if event["message"] != message {
            continue;
        }
        let (Some(k), Some(id)) = (event[key].as_str(), event["question_id"].as_str()) else {
            continue;
        };
        if keys.contains(k) && !found.contains_key(k) {
            let at = event["timestamp"]
                .as_str()
                .and_then(hark_harness::clock::rfc3339)
                .unwrap_or(line.at);
            found.insert(
                k.to_owned(),
                Seen {
                    question_id: id.to_owned(),
                    at,
                },
            );
        }
    }
}
