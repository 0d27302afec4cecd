//! A child MCP server driven with raw newline-delimited JSON-RPC over its
//! pipes, no MCP client library in between, so the timings are the server's.
//!
//! A reader thread timestamps every stdout line the moment it is read, and
//! keeps every line so [`Peer::close`] can tell whether the child wrote
//! anything but protocol on stdout.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The protocol version every benchmark client asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What went wrong talking to the child.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error("cannot start {program:?}")]
    Spawn {
        program: OsString,
        #[source]
        source: std::io::Error,
    },
    #[error("the child has no stdout pipe")]
    NoStdout,
    #[error("cannot encode a message")]
    Encode(#[source] serde_json::Error),
    #[error("stdin is already closed")]
    StdinClosed,
    #[error("cannot write to the server")]
    Write(#[source] std::io::Error),
    #[error("no response to request {id} within {timeout:?}")]
    NoResponse { id: u64, timeout: Duration },
    #[error("the server closed stdout before answering request {id}")]
    ClosedBeforeAnswer { id: u64 },
    #[error("the server closed stdout")]
    Closed,
    #[error("initialize failed: {response}")]
    Initialize { response: Value },
    #[error("the server did not exit within {timeout:?} of stdin closing")]
    NoExit { timeout: Duration },
}

/// One line the child wrote on stdout, stamped when it was read.
#[derive(Debug)]
struct Line {
    at: Instant,
    bytes: Vec<u8>,
}

/// A running child server.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    reader: Option<JoinHandle<()>>,
    /// When `spawn` was called.
    pub spawned: Instant,
    /// Every stdout line so far, raw.
    seen: Vec<Vec<u8>>,
}

/// How a child ended after [`Peer::close`].
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// Every stdout line was a JSON-RPC message.
    pub stdout_clean: bool,
    /// The first line that was not, for the report.
    pub bad_line: Option<String>,
}

impl Peer {
    /// Spawns `command` with piped stdin/stdout (the caller sets stderr).
    pub fn spawn(command: &mut Command) -> Result<Peer, RpcError> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let spawned = Instant::now();
        let mut child = command.spawn().map_err(|source| RpcError::Spawn {
            program: command.get_program().to_owned(),
            source,
        })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or(RpcError::NoStdout)?;
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let mut bytes = Vec::new();
                match stdout.read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let at = Instant::now();
                        if bytes.last() == Some(&b'\n') {
                            bytes.pop();
                        }
                        if tx.send(Line { at, bytes }).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Peer {
            child,
            stdin,
            lines,
            reader: Some(reader),
            spawned,
            seen: Vec::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one message as one line.
    pub fn send(&mut self, message: &Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(message).map_err(RpcError::Encode)?;
        line.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or(RpcError::StdinClosed)?;
        stdin.write_all(&line).map_err(RpcError::Write)
    }

    /// Sends a request.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str) -> Result<(), RpcError> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }))
    }

    /// Waits for the response to request `id`: when it was read, and the
    /// message. Other lines (notifications) are kept for the stdout check.
    pub fn response(&mut self, id: u64, timeout: Duration) -> Result<(Instant, Value), RpcError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(RpcError::NoResponse { id, timeout });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RpcError::ClosedBeforeAnswer { id });
                }
            };
            let parsed = serde_json::from_slice::<Value>(&line.bytes).ok();
            self.seen.push(line.bytes);
            if let Some(message) = parsed
                && message.get("id") == Some(&json!(id))
                && (message.get("result").is_some() || message.get("error").is_some())
            {
                return Ok((line.at, message));
            }
        }
    }

    /// The next JSON message the child wrote, whatever its id, or `Ok(None)`
    /// when none came within `timeout`. Unlike [`Peer::response`] it drops
    /// nothing, for callers with several requests in flight. Lines that are
    /// not JSON are skipped (and kept for the stdout check).
    pub fn next_message(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<(Instant, Value)>, RpcError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Err(RpcError::Closed),
            };
            let parsed = serde_json::from_slice::<Value>(&line.bytes).ok();
            self.seen.push(line.bytes);
            if let Some(message) = parsed {
                return Ok(Some((line.at, message)));
            }
        }
    }

    /// `initialize` as request `id`, then `notifications/initialized`.
    /// Returns when the initialize response was read.
    pub fn initialize(&mut self, id: u64, timeout: Duration) -> Result<Instant, RpcError> {
        self.request(
            id,
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "hark-bench", "version": env!("CARGO_PKG_VERSION") }
            }),
        )?;
        let (at, response) = self.response(id, timeout)?;
        if response.pointer("/result/protocolVersion").is_none() {
            return Err(RpcError::Initialize { response });
        }
        self.notify("notifications/initialized")?;
        Ok(at)
    }

    /// The child's peak resident set so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        peak_rss_kib(self.pid())
    }

    /// Closes stdin (a stdio MCP server exits on EOF), waits up to `timeout`
    /// for the child to exit, and checks everything it wrote on stdout.
    pub fn close(mut self, timeout: Duration) -> Result<Finished, RpcError> {
        drop(self.stdin.take());
        let status = wait_until(&mut self.child, Instant::now() + timeout)
            .ok_or(RpcError::NoExit { timeout })?;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line.bytes);
        }
        let bad_line = self
            .seen
            .iter()
            .find(|line| !is_jsonrpc(line))
            .map(|line| String::from_utf8_lossy(line).chars().take(200).collect());
        Ok(Finished {
            status,
            stdout_clean: bad_line.is_none(),
            bad_line,
        })
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Only reached with the child still running on an error path.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Process `pid`'s peak resident set so far (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Waits for `child` to exit until `deadline`; past it, kills it (`None`).
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    hark_harness::process::wait_or_kill(child, deadline.saturating_duration_since(Instant::now()))
}

/// The response is a non-error tool result whose one text is `expected`.
pub fn is_expected(response: &Value, expected: &str) -> bool {
    let Some(result) = response.get("result") else {
        return false;
    };
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text")?.as_str())
                .collect()
        })
        .unwrap_or_default();
    // `isError` may be left out, which means false.
    matches!(result.get("isError"), None | Some(Value::Bool(false))) && texts == [expected]
}

/// Whether a stdout line is one JSON-RPC 2.0 message: a request or
/// notification (`method`), or a response (`id` and `result` or `error`).
fn is_jsonrpc(line: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let is_response = message.contains_key("id")
        && (message.contains_key("result") != message.contains_key("error"));
    message.get("jsonrpc") == Some(&json!("2.0"))
        && (message.get("method").is_some_and(Value::is_string) || is_response)
}

#[cfg(test)]
mod tests {
    use super::is_jsonrpc;

    #[test]
    fn only_jsonrpc_messages_pass() {
        assert!(is_jsonrpc(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(is_jsonrpc(
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
        ));
        assert!(!is_jsonrpc(b""));
        assert!(!is_jsonrpc(b"hark: starting"));
        assert!(!is_jsonrpc(br#"{"id":1,"result":{}}"#));
        assert!(!is_jsonrpc(
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#
        ));
    }
}
