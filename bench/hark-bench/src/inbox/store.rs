//! The store's view at the end: `hark inbox --all --json`, checked item by item.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::Instant;

use hark_harness::Sandbox;
use serde_json::{Value, json};

use super::operator::Run;
use super::results::StoreCheck;
use super::{RUN_TIMEOUT, label, parse_question, question};
use crate::roundtrip::log_file;
use crate::rpc::wait_until;

/// Lists the whole inbox (`hark inbox --all --json`) and checks it.
pub(super) fn check_store(sandbox: &Sandbox, clients: usize, per_client: usize) -> StoreCheck {
    let mut check = StoreCheck::default();
    let out = sandbox.path("inbox-all.json");
    let err = sandbox.path("inbox-all.stderr");
    let text = (|| {
        let mut run = Run {
            child: sandbox
                .hark(["inbox", "--all", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::from(log_file(&out)?))
                .stderr(Stdio::from(log_file(&err)?))
                .spawn()
                .map_err(|e| format!("cannot start hark inbox: {e}"))?,
            started: Instant::now(),
        };
        let status = wait_until(&mut run.child, Instant::now() + RUN_TIMEOUT)?
            .ok_or(format!("no answer within {RUN_TIMEOUT:?}"))?;
        if !status.success() {
            let stderr = std::fs::read_to_string(&err).unwrap_or_default();
            return Err(format!("{status}: {}", stderr.trim()));
        }
        std::fs::read_to_string(&out).map_err(|e| e.to_string())
    })();
    let items = match text.and_then(|t| {
        check.bytes = t.len();
        serde_json::from_str::<Value>(&t).map_err(|e| format!("output is not JSON: {e}"))
    }) {
        Ok(Value::Array(items)) => items,
        Ok(_) => {
            check.error = Some("hark inbox --all --json: output is not a JSON array".into());
            return check;
        }
        Err(e) => {
            check.error = Some(format!("hark inbox --all --json failed: {e}"));
            return check;
        }
    };
    check.items = items.len();
    let mut ids = HashSet::new();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for item in &items {
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
