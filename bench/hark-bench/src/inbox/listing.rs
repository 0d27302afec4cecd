//! `hark inbox` runs, as the operator and the end check start them: a CLI
//! run in flight, and what a finished listing printed.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::logs::LogFileError;

/// Why a listing gave no items.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error("cannot start hark inbox")]
    Spawn(#[source] std::io::Error),
    /// It exited non-zero; what it said on stderr.
    #[error("{status}: {stderr}")]
    Failed { status: ExitStatus, stderr: String },
    #[error("no answer within {timeout:?}")]
    NoAnswer { timeout: Duration },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("output is not JSON")]
    NotJson(#[source] serde_json::Error),
    #[error("output is not a JSON array")]
    NotArray,
    #[error("an item without id or question: {item}")]
    ItemWithoutQuestion { item: Value },
}

/// A CLI run in flight, killed if abandoned.
#[derive(Debug)]
pub(super) struct Run {
    pub(super) child: Child,
    pub(super) started: Instant,
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a `hark inbox` run that ended with `status` (`None`: it outstayed
/// `timeout`) printed to `out`, its stderr being in `err`.
pub(crate) fn output(
    status: Option<ExitStatus>,
    timeout: Duration,
    out: &Path,
    err: &Path,
) -> Result<String, ListingError> {
    match status {
        Some(status) if status.success() => {
            std::fs::read_to_string(out).map_err(|source| ListingError::Read {
                path: out.to_owned(),
                source,
            })
        }
        Some(status) => Err(ListingError::Failed {
            status,
            stderr: std::fs::read_to_string(err)
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }),
        None => Err(ListingError::NoAnswer { timeout }),
    }
}

/// The items of `hark inbox --json`'s output.
pub(crate) fn items(text: &str) -> Result<Vec<Value>, ListingError> {
    match serde_json::from_str(text).map_err(ListingError::NotJson)? {
        Value::Array(items) => Ok(items),
        _ => Err(ListingError::NotArray),
    }
}

/// `(id, first question)` of every pending item in `hark inbox --json`'s output.
pub(super) fn pending_items(text: &str) -> Result<Vec<(String, String)>, ListingError> {
    items(text)?
        .iter()
        .filter(|item| item.get("outcome").is_none_or(Value::is_null))
        .map(|item| {
            let id = item.get("id").and_then(Value::as_str);
            let question = item
                .pointer("/request/questions/0/question")
                .and_then(Value::as_str);
            match (id, question) {
                (Some(id), Some(q)) => Ok((id.to_owned(), q.to_owned())),
                _ => Err(ListingError::ItemWithoutQuestion { item: item.clone() }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_pending_items_are_listed() {
        let text = json!([
            {"id": "a", "outcome": null, "request": {"questions": [{"question": "Client 0 item 0?"}]}},
            {"id": "b", "outcome": {"outcome": "answered"}, "request": {"questions": [{"question": "Client 0 item 1?"}]}}
        ])
        .to_string();
        assert_eq!(
            pending_items(&text).unwrap(),
            vec![("a".to_owned(), "Client 0 item 0?".to_owned())]
        );
        assert!(matches!(
            pending_items("nope"),
            Err(ListingError::NotJson(_))
        ));
        assert!(matches!(pending_items("{}"), Err(ListingError::NotArray)));
        assert!(matches!(
            pending_items(r#"[{"id": "c"}]"#),
            Err(ListingError::ItemWithoutQuestion { .. })
        ));
    }
}
