//! The lines a child writes (a daemon's or the app's log, dbus-monitor's
//! output), collected by a reader thread, each stamped when it was read.
//! Waiting is on those lines: a condition variable wakes the waiter on every
//! new line, up to a deadline, and gives up early once the stream has ended.
//!
//! Two ways to wait: [`Lines::wait`] and [`Lines::wait_event_from`] return
//! an error a benchmark can report; [`Lines::wait_until`], [`Lines::wait_for`]
//! and [`Lines::wait_event`] wait [`PATIENCE`] and panic, as a test wants.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

/// How long a test waits for an event before failing.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Why a wait found nothing; each carries the last lines of the stream.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The stream ended (its child exited or closed it) first.
    #[error("no {what}: {stream} ended; the last lines of {stream}:\n{tail}")]
    Ended {
        what: String,
        stream: &'static str,
        tail: String,
    },
    #[error("no {what}: not within {patience:?}; the last lines of {stream}:\n{tail}")]
    TimedOut {
        what: String,
        patience: Duration,
        stream: &'static str,
        tail: String,
    },
}

/// One line, stamped when the reader thread got it.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: SystemTime,
    pub text: String,
}

#[derive(Debug, Default)]
struct State {
    lines: Vec<Line>,
    /// Bytes read so far, newlines included.
    bytes: u64,
    /// The stream ended (the child exited or closed it).
    ended: bool,
}

/// A followed stream.
#[derive(Debug, Clone)]
pub struct Lines {
    name: &'static str,
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl Lines {
    /// Follows `stream` on a new thread; `name` says whose it is in errors.
    pub fn follow(name: &'static str, stream: impl Read + Send + 'static) -> Lines {
        let lines = Lines {
            name,
            inner: Arc::default(),
        };
        let sink = lines.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                match reader.read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let at = SystemTime::now();
                        let text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
                        let mut state = sink.lock();
                        state.lines.push(Line { at, text });
                        state.bytes += n as u64;
                        drop(state);
                        sink.inner.1.notify_all();
                    }
                }
            }
            sink.lock().ended = true;
            sink.inner.1.notify_all();
        });
        lines
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many lines so far: an index to search from later.
    pub fn len(&self) -> usize {
        self.lock().lines.len()
    }

    /// Whether nothing has been read yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many bytes were read so far.
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// Whether the stream has ended (its child exited).
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// Lines `from..` so far.
    pub fn since(&self, from: usize) -> Vec<Line> {
        self.lock().lines.get(from..).unwrap_or_default().to_vec()
    }

    /// The text of every line so far.
    pub fn all(&self) -> Vec<String> {
        self.lock().lines.iter().map(|l| l.text.clone()).collect()
    }

    /// Waits until `found` finds something in the lines so far (it is asked
    /// again on each new line), for at most `patience`.
    pub fn wait<T>(
        &self,
        what: &str,
        patience: Duration,
        mut found: impl FnMut(&[Line]) -> Option<T>,
    ) -> Result<T, WaitError> {
        let deadline = Instant::now() + patience;
        let mut state = self.lock();
        loop {
            if let Some(hit) = found(&state.lines) {
                return Ok(hit);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.ended || left.is_zero() {
                let (what, stream, tail) = (what.to_owned(), self.name, tail(&state.lines, 25));
                return Err(if state.ended {
                    WaitError::Ended { what, stream, tail }
                } else {
                    WaitError::TimedOut {
                        what,
                        patience,
                        stream,
                        tail,
                    }
                });
            }
            state = self
                .inner
                .1
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Like [`Lines::wait`] for [`PATIENCE`], panicking when nothing is found.
    pub fn wait_until<T>(&self, what: &str, found: impl FnMut(&[Line]) -> Option<T>) -> T {
        self.wait(what, PATIENCE, found)
            .unwrap_or_else(|e| panic!("timed out waiting: {e}"))
    }

    /// Waits until a line satisfies `pred` and returns it; panics after
    /// [`PATIENCE`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_until(what, |lines| {
            lines.iter().find(|l| pred(&l.text)).map(|l| l.text.clone())
        })
    }

    /// Waits for a JSON log event with this message whose fields match
    /// `fields`; panics after [`PATIENCE`].
    pub fn wait_event(&self, message: &str, fields: &[(&str, &str)]) -> Value {
        let matches = |v: &Value| fields.iter().all(|(k, want)| v[*k].as_str() == Some(*want));
        self.wait(&format!("event {message} {fields:?}"), PATIENCE, |lines| {
            find_event(lines, 0, message, &matches)
        })
        .unwrap_or_else(|e| panic!("timed out waiting: {e}"))
        .value
    }

    /// Waits until an item of `session` is asked (hark's
    /// `operator.question.asked`); returns its id.
    pub fn question_id(&self, session: &str) -> String {
        let asked = self.wait_event("operator.question.asked", &[("session_id", session)]);
        asked["question_id"].as_str().unwrap().to_owned()
    }

    /// Waits for a JSON log line from index `from` on whose `message` is
    /// `message` and which `matches`; returns its index, when it was read,
    /// and the event.
    pub fn wait_event_from(
        &self,
        from: usize,
        message: &str,
        patience: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Result<Event, WaitError> {
        self.wait(&format!("{message:?} event"), patience, |lines| {
            find_event(lines, from, message, &matches)
        })
    }

    /// Like [`Lines::wait_event_from`], but only what is there already.
    pub fn find_event(
        &self,
        from: usize,
        message: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Option<Event> {
        find_event(&self.lock().lines, from, message, &matches)
    }

    /// The last `n` lines, for an error report.
    pub fn tail(&self, n: usize) -> String {
        tail(&self.lock().lines, n)
    }
}

/// A JSON log event found in a log.
#[derive(Debug, Clone)]
pub struct Event {
    pub index: usize,
    /// When the line was read.
    pub read_at: SystemTime,
    pub value: Value,
}

impl Event {
    /// When it was logged (its `timestamp`), else when it was read.
    pub fn at(&self) -> SystemTime {
        self.value["timestamp"]
            .as_str()
            .and_then(crate::clock::rfc3339)
            .unwrap_or(self.read_at)
    }
}

fn find_event(
    lines: &[Line],
    from: usize,
    message: &str,
    matches: &impl Fn(&Value) -> bool,
) -> Option<Event> {
    lines
        .iter()
        .enumerate()
        .skip(from)
        .filter(|(_, l)| l.text.starts_with('{'))
        .find_map(|(index, line)| {
            let value = serde_json::from_str::<Value>(&line.text).ok()?;
            (value["message"] == message && matches(&value)).then_some(Event {
                index,
                read_at: line.at,
                value,
            })
        })
}

fn tail(lines: &[Line], n: usize) -> String {
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("  {}", l.text))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_sees_lines_as_they_come_and_gives_up_when_the_stream_ends() {
        let lines = Lines::follow(
            "the sample",
            &b"plain\n{\"message\":\"ready\",\"n\":\"1\"}\nlast"[..],
        );
        let event = lines.wait_event("ready", &[("n", "1")]);
        assert_eq!(event["n"], "1");
        assert_eq!(lines.wait_for("the last line", |l| l == "last"), "last");
        let missing = lines.wait("a line never written", PATIENCE, |lines| {
            lines.iter().find(|l| l.text == "never").map(|_| ())
        });
        let error = missing.unwrap_err();
        assert!(matches!(error, WaitError::Ended { .. }), "{error}");
        assert!(
            error.to_string().starts_with(
                "no a line never written: the sample ended; the last lines of the sample:\n  plain"
            ),
            "{error}"
        );
        assert_eq!(lines.bytes(), 38);
        assert_eq!(lines.all().len(), 3);
    }
}
