//! The operator: `hark inbox --json` and `hark answer`, from the command line.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use hark_harness::Sandbox;
use serde_json::Value;

use super::results::OperatorStats;
use super::{ANSWER_POOL, RELIST_PAUSE, RUN_TIMEOUT, label, parse_question, push_example};
use crate::roundtrip::log_file;

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

/// A `hark answer` in flight.
#[derive(Debug)]
struct Answering {
    run: Run,
    id: String,
    stderr: PathBuf,
}

pub(super) struct Operator<'a> {
    sandbox: &'a Sandbox,
    listing: Option<Run>,
    /// Whether to list again (not once every call has its result).
    pub(super) listing_wanted: bool,
    /// When the last listing ended, and whether it brought anything new.
    last_listing: Option<(Instant, bool)>,
    queue: VecDeque<(String, &'static str)>,
    queued: HashSet<String>,
    answering: Vec<Option<Answering>>,
    /// Per item id: when a `hark answer` for it last succeeded.
    answered: HashMap<String, Instant>,
    pub(super) stats: OperatorStats,
}

impl<'a> Operator<'a> {
    pub(super) fn new(sandbox: &'a Sandbox) -> Operator<'a> {
        Operator {
            sandbox,
            listing: None,
            listing_wanted: true,
            last_listing: None,
            queue: VecDeque::new(),
            queued: HashSet::new(),
            answering: (0..ANSWER_POOL).map(|_| None).collect(),
            answered: HashMap::new(),
            stats: OperatorStats::default(),
        }
    }

    /// `hark ARGS` on the daemon's socket.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.sandbox.hark(args);
        command.stdin(Stdio::null());
        command
    }

    /// Nothing running and nothing queued.
    pub(super) fn idle(&self) -> bool {
        self.listing.is_none()
            && self.queue.is_empty()
            && self.answering.iter().all(Option::is_none)
    }

    /// Kills whatever still runs, and notes it.
    pub(super) fn abandon(&mut self) {
        if let Some(run) = self.listing.take() {
            self.stats.killed_at_abort.push(format!(
                "hark inbox --json, after {:.1} s",
                run.started.elapsed().as_secs_f64()
            ));
        }
        for a in self.answering.iter_mut().filter_map(Option::take) {
            self.stats.killed_at_abort.push(format!(
                "hark answer {}, after {:.1} s",
                a.id,
                a.run.started.elapsed().as_secs_f64()
            ));
        }
    }

    /// One turn: reap finished runs, start new ones. `Ok(true)` when a
    /// `hark answer` finished (progress).
    pub(super) fn poll(&mut self) -> Result<bool, String> {
        let mut progress = false;
        for slot in 0..self.answering.len() {
            let finished = match &mut self.answering[slot] {
                Some(a) => a.run.child.try_wait().map_err(|e| e.to_string())?,
                None => None,
            };
            let timed_out = self.answering[slot]
                .as_ref()
                .is_some_and(|a| a.run.started.elapsed() >= RUN_TIMEOUT);
            if (finished.is_some() || timed_out)
                && let Some(a) = self.answering[slot].take()
            {
                self.answer_finished(a, finished.and_then(|s| s.code()));
                progress = true;
            }
        }
        self.poll_listing()?;
        while !self.queue.is_empty()
            && let Some(slot) = self.answering.iter().position(Option::is_none)
        {
            let Some((id, label)) = self.queue.pop_front() else {
                break;
            };
            self.queued.remove(&id);
            let stderr = self.sandbox.path(format!("inbox-answer-{slot}.stderr"));
            let child = self
                .command(&["answer", &id, "--pick", label])
                .stdout(Stdio::null())
                .stderr(Stdio::from(log_file(&stderr)?))
                .spawn()
                .map_err(|e| format!("cannot start hark answer: {e}"))?;
            self.answering[slot] = Some(Answering {
                run: Run {
                    child,
                    started: Instant::now(),
                },
                id,
                stderr,
            });
        }
        Ok(progress)
    }

    fn answer_finished(&mut self, a: Answering, code: Option<i32>) {
        let took = a.run.started.elapsed();
        drop(a.run); // kills it if it timed out
        self.stats.answer_runs.push(took);
        let stderr = std::fs::read_to_string(&a.stderr).unwrap_or_default();
        match code {
            Some(0) => {
                self.stats.answered_ok += 1;
                if self.answered.insert(a.id.clone(), Instant::now()).is_some() {
                    self.stats.double_answers += 1;
                    push_example(
                        &mut self.stats.examples,
                        format!("answered twice with exit 0: {}", a.id),
                    );
                }
            }
            _ if stderr.contains("already settled") => self.stats.already_settled += 1,
            _ => {
                self.stats.failed += 1;
                let why = code.map_or_else(
                    || format!("no exit code after {took:?}"),
                    |c| format!("exit {c}"),
                );
                push_example(
                    &mut self.stats.examples,
                    format!("hark answer {} failed ({why}): {}", a.id, stderr.trim()),
                );
            }
        }
    }

    fn poll_listing(&mut self) -> Result<(), String> {
        let out = self.sandbox.path("inbox-list.json");
        let err = self.sandbox.path("inbox-list.stderr");
        let Some(listing) = &mut self.listing else {
            // Only list again once everything listed is on its way.
            let due = self
                .last_listing
                .is_none_or(|(ended, fresh)| fresh || ended.elapsed() >= RELIST_PAUSE);
            if self.listing_wanted && self.queue.is_empty() && due {
                let child = self
                    .command(&["inbox", "--json"])
                    .stdout(Stdio::from(log_file(&out)?))
                    .stderr(Stdio::from(log_file(&err)?))
                    .spawn()
                    .map_err(|e| format!("cannot start hark inbox: {e}"))?;
                self.listing = Some(Run {
                    child,
                    started: Instant::now(),
                });
            }
            return Ok(());
        };
        let status = listing.child.try_wait().map_err(|e| e.to_string())?;
        let started = listing.started;
        if status.is_none() && started.elapsed() < RUN_TIMEOUT {
            return Ok(());
        }
        self.listing = None; // kills it if it timed out
        self.stats.listings.push(started.elapsed());
        let listed = match status {
            Some(s) if s.success() => std::fs::read_to_string(&out)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    let bytes = &mut self.stats.largest_listing_bytes;
                    *bytes = (*bytes).max(text.len());
                    pending_items(&text)
                }),
            Some(s) => Err(format!(
                "{s}: {}",
                std::fs::read_to_string(&err).unwrap_or_default().trim()
            )),
            None => Err(format!("no answer within {RUN_TIMEOUT:?}")),
        };
        let mut fresh = false;
        match listed {
            Ok(items) => {
                self.stats.most_pending = self.stats.most_pending.max(items.len());
                for (id, question) in items {
                    let busy = self.queued.contains(&id)
                        || self.answering.iter().flatten().any(|a| a.id == id);
                    if busy {
                        continue;
                    }
                    if let Some(answered) = self.answered.get(&id) {
                        if *answered > started {
                            continue; // this listing began before that answer
                        }
                        self.stats.pending_after_answer += 1;
                        push_example(
                            &mut self.stats.examples,
                            format!("still pending after hark answer succeeded: {id}"),
                        );
                    }
                    let Some((c, i)) = parse_question(&question) else {
                        self.stats.unparsable += 1;
                        push_example(
                            &mut self.stats.examples,
                            format!("not our question: {question:?} ({id})"),
                        );
                        continue;
                    };
                    self.queued.insert(id.clone());
                    self.queue.push_back((id, label(c, i)));
                    fresh = true;
                }
            }
            Err(e) => {
                self.stats.listing_failures += 1;
                push_example(
                    &mut self.stats.examples,
                    format!("hark inbox --json failed: {e}"),
                );
            }
        }
        self.last_listing = Some((Instant::now(), fresh));
        Ok(())
    }
}

/// `(id, first question)` of every pending item in `hark inbox --json`'s output.
fn pending_items(text: &str) -> Result<Vec<(String, String)>, String> {
    let items: Value =
        serde_json::from_str(text).map_err(|e| format!("output is not JSON: {e}"))?;
    let items = items.as_array().ok_or("output is not a JSON array")?;
    items
        .iter()
        .filter(|item| item.get("outcome").is_none_or(Value::is_null))
        .map(|item| {
            let id = item.get("id").and_then(Value::as_str);
            let question = item
                .pointer("/request/questions/0/question")
                .and_then(Value::as_str);
            match (id, question) {
                (Some(id), Some(q)) => Ok((id.to_owned(), q.to_owned())),
                _ => Err(format!("an item without id or question: {item}")),
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
        assert!(pending_items("nope").is_err());
    }
}
