//! The operator: `hark inbox --json` and `hark answer`, from the command line.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use hark_harness::{Report, Sandbox};

use super::listing::{self, ListingError, Run, pending_items};
use super::results::OperatorStats;
use super::{ANSWER_POOL, RELIST_PAUSE, RUN_TIMEOUT, label, parse_question, push_example};
use crate::logs::{LogFileError, log_file};

/// Why the operator could not go on (a listing or an answer that fails is
/// counted, not this).
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error("cannot start {command}")]
    Spawn {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for {command}")]
    Wait {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Whether `run`, a `command`, has exited, and how.
fn try_wait(run: &mut Run, command: &'static str) -> Result<Option<ExitStatus>, OperatorError> {
    run.child
        .try_wait()
        .map_err(|source| OperatorError::Wait { command, source })
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
    pub(super) fn poll(&mut self) -> Result<bool, OperatorError> {
        let mut progress = false;
        for slot in 0..self.answering.len() {
            let finished = match &mut self.answering[slot] {
                Some(a) => try_wait(&mut a.run, "hark answer")?,
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
                .map_err(|source| OperatorError::Spawn {
                    command: "hark answer",
                    source,
                })?;
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

    /// Starts a listing when one is due, or takes in the one that ended.
    fn poll_listing(&mut self) -> Result<(), OperatorError> {
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
                    .map_err(|source| OperatorError::Spawn {
                        command: "hark inbox",
                        source,
                    })?;
                self.listing = Some(Run {
                    child,
                    started: Instant::now(),
                });
            }
            return Ok(());
        };
        let status = try_wait(listing, "hark inbox")?;
        let started = listing.started;
        if status.is_none() && started.elapsed() < RUN_TIMEOUT {
            return Ok(());
        }
        self.listing = None; // kills it if it timed out
        self.stats.listings.push(started.elapsed());
        let listed = listing::output(status, RUN_TIMEOUT, &out, &err).and_then(|text| {
            let bytes = &mut self.stats.largest_listing_bytes;
            *bytes = (*bytes).max(text.len());
            pending_items(&text)
        });
        let fresh = match listed {
            Ok(items) => self.queue_pending(items, started),
            Err(e) => {
                self.listing_failed(&e);
                false
            }
        };
        self.last_listing = Some((Instant::now(), fresh));
        Ok(())
    }

    /// Queues the answers to what a listing started at `started` found
    /// pending; whether it found anything new.
    fn queue_pending(&mut self, items: Vec<(String, String)>, started: Instant) -> bool {
        self.stats.most_pending = self.stats.most_pending.max(items.len());
        let mut fresh = false;
        for (id, question) in items {
            let busy =
                self.queued.contains(&id) || self.answering.iter().flatten().any(|a| a.id == id);
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
        fresh
    }

    fn listing_failed(&mut self, e: &ListingError) {
        self.stats.listing_failures += 1;
        push_example(
            &mut self.stats.examples,
            format!("hark inbox --json failed: {}", Report(e)),
        );
    }
}
