//! Round trip: one `hark mcp-operator-ask` wired to a `hark serve
//! --prompter script:…` daemon, and `calls` sequential `tools/call ask`, each
//! timed from the request's write to its response's read. The script answers
//! at once, so this is hark's own overhead per question: MCP decoding and
//! validation, a fresh bridge connection per call, the daemon's registry and
//! prompter, and the way back.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cold::with_stderr;
use crate::rpc::{Peer, wait_until};
use crate::sandbox::Sandbox;
use crate::stats::Summary;

const QUESTION: &str = "Which database?";
const ANSWER: &str = "SQLite";
/// The only text a correct answer may have.
pub const EXPECTED_TEXT: &str = r#"{"answers":{"Which database?":"SQLite"}}"#;
/// How long a call, the daemon's socket, or a shutdown may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the round trip measured.
#[derive(Debug)]
pub struct Results {
    pub calls: Summary,
    /// The first call alone (it pays for lazy setup, if any).
    pub first_ms: f64,
    /// Calls whose result was exactly [`EXPECTED_TEXT`] and not an error.
    pub correct: usize,
    /// The first wrong result, for the report.
    pub first_wrong: Option<String>,
    /// The MCP server kept stdout to JSON-RPC.
    pub stdout_clean: bool,
    /// The daemon exited cleanly on SIGTERM.
    pub daemon_clean_exit: bool,
}

/// The daemon, killed if the benchmark bails out early.
#[derive(Debug)]
pub struct Daemon {
    pub child: Child,
    /// Its stderr.
    pub log: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Daemon {
    /// Stops it with SIGTERM, as a user's Ctrl-C or a service manager would.
    pub fn stop(mut self) -> Result<bool, String> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| format!("cannot run kill: {e}"))?;
        if !sent.success() {
            return Err(format!("kill -TERM {pid} failed: {sent}"));
        }
        let status = wait_until(&mut self.child, Instant::now() + TIMEOUT)?;
        Ok(status.is_some_and(|s| s.success()))
    }
}

/// Runs the round trip with `hark`, all its state in `sandbox`.
pub fn measure(hark: &Path, sandbox: &Sandbox, calls: usize) -> Result<Results, String> {
    let script = sandbox.path("script.json");
    let socket = sandbox.path("run/hark.sock");
    std::fs::write(&script, json!({ QUESTION: ANSWER }).to_string())
        .map_err(|e| format!("cannot write {}: {e}", script.display()))?;

    let daemon_log = sandbox.path("serve.stderr");
    let daemon = Daemon {
        child: sandbox
            .command(hark, None)
            .arg("serve")
            .arg("--prompter")
            .arg(format!("script:{}", script.display()))
            .arg("--socket")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file(&daemon_log)?))
            .spawn()
            .map_err(|e| format!("cannot start hark serve: {e}"))?,
        log: daemon_log,
    };
    wait_for_socket(&socket).map_err(|e| with_stderr(e, &daemon.log))?;

    let mcp_log = sandbox.path("mcp-operator-ask.stderr");
    let mut command = sandbox.command(hark, None);
    command
        .arg("mcp-operator-ask")
        .env("HARK_ASK_SOCK", &socket)
        .stderr(Stdio::from(log_file(&mcp_log)?));
    let mut peer = Peer::spawn(&mut command)?;
    let fail = |e: String| with_stderr(with_stderr(e, &mcp_log), &daemon.log);
    peer.initialize(1, TIMEOUT).map_err(fail)?;

    let arguments = json!({
        "questions": [{
            "question": QUESTION,
            "header": "Database",
            "multiSelect": false,
            "options": [
                { "label": "Postgres", "description": "a" },
                { "label": ANSWER, "description": "b" }
            ]
        }]
    });
    let params = json!({ "name": "ask", "arguments": arguments });
    let mut times = Vec::with_capacity(calls);
    let mut correct = 0;
    let mut first_wrong = None;
    for id in 2..2 + calls as u64 {
        let sent = Instant::now();
        peer.request(id, "tools/call", params.clone())
            .map_err(fail)?;
        let (received, response) = peer.response(id, TIMEOUT).map_err(fail)?;
        times.push(received - sent);
        if is_expected(&response) {
            correct += 1;
        } else if first_wrong.is_none() {
            first_wrong = Some(response.to_string());
        }
    }

    let finished = peer.close(TIMEOUT).map_err(fail)?;
    let daemon_clean_exit = daemon.stop()?;
    Ok(Results {
        first_ms: times.first().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        calls: Summary::of_durations(&times).ok_or("no calls were made")?,
        correct,
        first_wrong,
        stdout_clean: finished.stdout_clean && finished.status.success(),
        daemon_clean_exit,
    })
}

pub fn log_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// Polls for the daemon's socket file, up to [`TIMEOUT`].
pub fn wait_for_socket(socket: &Path) -> Result<(), String> {
    let deadline = Instant::now() + TIMEOUT;
    while !socket.exists() {
        if Instant::now() >= deadline {
            return Err(format!(
                "hark serve did not create {} within {TIMEOUT:?}",
                socket.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// The response is a non-error tool result whose one text is [`EXPECTED_TEXT`].
fn is_expected(response: &Value) -> bool {
    crate::rpc::is_expected(response, EXPECTED_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_answer_counts() {
        let ok = json!({"jsonrpc":"2.0","id":2,"result":{
            "content":[{"type":"text","text":EXPECTED_TEXT}],"isError":false}});
        assert!(is_expected(&ok));
        let mut err = ok.clone();
        err["result"]["isError"] = json!(true);
        assert!(!is_expected(&err));
        let mut other = ok.clone();
        other["result"]["content"][0]["text"] = json!(r#"{"answers":{}}"#);
        assert!(!is_expected(&other));
        assert!(!is_expected(
            &json!({"jsonrpc":"2.0","id":2,"error":{"code":-1}})
        ));
    }
}
