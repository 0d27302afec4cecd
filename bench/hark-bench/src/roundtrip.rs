//! Round trip: one `hark mcp-operator-ask` wired to a `hark serve
//! --prompter script:…` daemon, and `calls` sequential `tools/call ask`, each
//! timed from the request's write to its response's read. The script answers
//! at once, so this is hark's own overhead per question: MCP decoding and
//! validation, a fresh bridge connection per call, the daemon's registry and
//! prompter, and the way back.

use std::process::Stdio;
use std::time::{Duration, Instant};

use hark_harness::{Daemon, DaemonError, ProcessError, Sandbox};
use serde_json::{Value, json};

use crate::logs::{LogFileError, Tail, log_file};
use crate::rpc::{Peer, RpcError};
use crate::stats::Summary;

const QUESTION: &str = "Which database?";
const ANSWER: &str = "SQLite";
/// The only text a correct answer may have.
pub const EXPECTED_TEXT: &str = r#"{"answers":{"Which database?":"SQLite"}}"#;
/// How long a call or a client's exit may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the round trip could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum RoundTripError {
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Log(#[from] LogFileError),
    /// Starting or talking to `hark mcp-operator-ask`, with the end of its
    /// stderr and of the daemon's.
    #[error("the round trip{mcp_stderr}{daemon_stderr}")]
    Mcp {
        mcp_stderr: Tail,
        daemon_stderr: Tail,
        #[source]
        source: RpcError,
    },
    #[error("cannot stop hark serve")]
    Stop(#[source] ProcessError),
    #[error("no calls were made")]
    NoCalls,
}

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

/// Runs the round trip with the sandbox's `hark`, all its state there.
pub fn measure(sandbox: &Sandbox, calls: usize) -> Result<Results, RoundTripError> {
    let daemon = Daemon::start(sandbox, &json!({ QUESTION: ANSWER }), &[])?;

    let mcp_log = sandbox.path("mcp-operator-ask.stderr");
    let mut command = sandbox.hark(["mcp-operator-ask"]);
    command
        .env("HARK_ASK_SOCK", sandbox.socket())
        .stderr(Stdio::from(log_file(&mcp_log)?));
    let fail = |source| RoundTripError::Mcp {
        mcp_stderr: Tail::of_file("hark mcp-operator-ask's", &mcp_log),
        daemon_stderr: Tail::of_lines("hark serve's", &daemon.log),
        source,
    };
    let mut peer = Peer::spawn(&mut command).map_err(fail)?;
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
    let daemon_clean_exit = daemon.stop().map_err(RoundTripError::Stop)?;
    Ok(Results {
        first_ms: times.first().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        calls: Summary::of_durations(&times).ok_or(RoundTripError::NoCalls)?,
        correct,
        first_wrong,
        stdout_clean: finished.stdout_clean && finished.status.success(),
        daemon_clean_exit,
    })
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
