//! The lines a child writes (the app's stderr log, dbus-monitor's stdout),
//! collected by a reader thread, each stamped when it was read. Waiting is on
//! those lines: a condition variable wakes the waiter on every new line, up
//! to a deadline.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

/// One line, stamped when the reader thread got it.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: SystemTime,
    pub text: String,
}

#[derive(Debug, Default)]
struct State {
    lines: Vec<Line>,
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
                    Ok(_) => {
                        let at = SystemTime::now();
                        let text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
                        sink.lock().lines.push(Line { at, text });
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

    /// Whether the stream has ended (its child exited).
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// Lines `from..` so far.
    pub fn since(&self, from: usize) -> Vec<Line> {
        self.lock().lines.get(from..).unwrap_or_default().to_vec()
    }

    /// Waits until `found` finds something in the lines so far (it is asked
    /// again on each new line), for at most `patience`.
    pub fn wait<T>(
        &self,
        what: &str,
        patience: Duration,
        mut found: impl FnMut(&[Line]) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + patience;
        let mut state = self.lock();
        loop {
            if let Some(hit) = found(&state.lines) {
                return Ok(hit);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.ended || left.is_zero() {
                let why = if state.ended {
                    format!("{} ended", self.name)
                } else {
                    format!("not within {patience:?}")
                };
                return Err(format!(
                    "no {what}: {why}; the last lines of {}:\n{}",
                    self.name,
                    tail(&state.lines, 25)
                ));
            }
            state = self
                .inner
                .1
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits for a JSON log line from index `from` on whose `message` is
    /// `message` and which `matches`; returns its index, when it was read,
    /// and the event.
    pub fn wait_event(
        &self,
        from: usize,
        message: &str,
        patience: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Result<Event, String> {
        self.wait(&format!("{message:?} event"), patience, |lines| {
            find_event(lines, from, message, &matches)
        })
    }

    /// Like [`Lines::wait_event`], but only what is there already.
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

/// A JSON log event found in the app's log.
#[derive(Debug, Clone)]
pub struct Event {
    pub index: usize,
    /// When the benchmark read the line.
    pub read_at: SystemTime,
    pub value: Value,
}

impl Event {
    /// When the app logged it (its `timestamp`), else when it was read.
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
