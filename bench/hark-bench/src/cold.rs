//! Cold start: how long after spawn a stdio MCP server answers `initialize`,
//! and then `tools/list` (what an agent waits for before it can call a tool),
//! its peak RSS, and whether it keeps stdout to the protocol.
//!
//! `hark mcp-operator-ask` and `bare-ask-server` are run side by side,
//! interleaved run by run (alternating which goes first), so drift in the
//! machine's load hits both alike.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::logs::{LogFileError, Tail, log_file};
use crate::rpc::{Peer, RpcError};
use crate::stats::Summary;
use hark_harness::Sandbox;

/// How long any one response may take before the run is a failure.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// Runs per server before the measured ones (page cache, dynamic loader).
pub const WARMUP_RUNS: usize = 2;

/// A cold run that failed: whose, which, and the end of the server's stderr.
#[derive(Debug, thiserror::Error)]
#[error("{subject} (cold run {run}){stderr}")]
pub struct ColdError {
    pub subject: &'static str,
    /// Counting the warm-up runs, from 1.
    pub run: usize,
    pub stderr: Tail,
    #[source]
    pub source: RunError,
}

/// Why one run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("exited with {0}")]
    Exited(ExitStatus),
}

/// One server under test.
#[derive(Debug)]
pub struct Subject {
    pub label: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Where its stderr goes, for the report when something fails.
    pub stderr_log: PathBuf,
}

/// The server agents are pointed at (`hark-ask` beside `hark`, else
/// `hark`; with `via_hark`, `hark`), as the cold start runs it, and where
/// the bare server is. The stderr log is set in the sandbox.
pub fn subjects(bin_dir: &Path, via_hark: bool) -> (Subject, PathBuf) {
    let ask = bin_dir.join("hark-ask");
    let (label, program) = if ask.is_file() && !via_hark {
        ("hark-ask mcp-operator-ask", ask)
    } else {
        ("hark mcp-operator-ask", bin_dir.join("hark"))
    };
    let server = Subject {
        label,
        program,
        args: vec!["mcp-operator-ask".into()],
        stderr_log: PathBuf::from("cold-hark.stderr"),
    };
    (server, bin_dir.join("bare-ask-server"))
}

/// The bare server, as the cold start runs it.
pub fn bare_subject(sandbox: &Sandbox, bare: PathBuf) -> Subject {
    Subject {
        label: "bare-ask-server",
        program: bare,
        args: Vec::new(),
        stderr_log: sandbox.path("cold-bare.stderr"),
    }
}

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Run {
    initialize: Duration,
    tools_list: Duration,
    peak_rss_kib: Option<u64>,
    stdout_clean: bool,
}

/// All runs of one server.
#[derive(Debug, Default)]
pub struct Results {
    initialize: Vec<Duration>,
    tools_list: Vec<Duration>,
    /// The largest VmHWM seen over the runs, in KiB.
    pub peak_rss_kib: Option<u64>,
    /// Every run wrote nothing but JSON-RPC on stdout.
    pub stdout_clean: bool,
    /// The first offending stdout line, if any.
    pub bad_line: Option<String>,
    /// The tool names `tools/list` returned (from the last run).
    pub tools: Vec<String>,
}

impl Results {
    pub fn initialize(&self) -> Option<Summary> {
        Summary::of_durations(&self.initialize)
    }

    pub fn tools_list(&self) -> Option<Summary> {
        Summary::of_durations(&self.tools_list)
    }
}

/// Runs `hark` and `bare` `runs` times each, interleaved.
pub fn measure(
    sandbox: &Sandbox,
    hark: &Subject,
    bare: &Subject,
    runs: usize,
) -> Result<(Results, Results), ColdError> {
    let mut results = (
        Results {
            stdout_clean: true,
            ..Results::default()
        },
        Results {
            stdout_clean: true,
            ..Results::default()
        },
    );
    for i in 0..WARMUP_RUNS + runs {
        let measured = i >= WARMUP_RUNS;
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_hark in order {
            let (subject, into) = if is_hark {
                (hark, &mut results.0)
            } else {
                (bare, &mut results.1)
            };
            let run = run_once(sandbox, subject, &mut into.tools, &mut into.bad_line).map_err(
                |source| ColdError {
                    subject: subject.label,
                    run: i + 1,
                    stderr: Tail::of_file("its", &subject.stderr_log),
                    source,
                },
            )?;
            if measured {
                into.initialize.push(run.initialize);
                into.tools_list.push(run.tools_list);
                into.peak_rss_kib = into.peak_rss_kib.max(run.peak_rss_kib);
                into.stdout_clean &= run.stdout_clean;
            }
        }
    }
    Ok(results)
}

fn run_once(
    sandbox: &Sandbox,
    subject: &Subject,
    tools: &mut Vec<String>,
    bad_line: &mut Option<String>,
) -> Result<Run, RunError> {
    let stderr = log_file(&subject.stderr_log)?;
    let mut command = sandbox.command(&subject.program);
    command.args(&subject.args).stderr(Stdio::from(stderr));

    let mut peer = Peer::spawn(&mut command)?;
    let initialized = peer.initialize(1, RESPONSE_TIMEOUT)?;
    peer.request(2, "tools/list", json!({}))?;
    let (listed, response) = peer.response(2, RESPONSE_TIMEOUT)?;
    *tools = response
        .pointer("/result/tools")
        .and_then(|t| t.as_array())
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let peak_rss_kib = peer.peak_rss_kib();
    let spawned = peer.spawned;
    let finished = peer.close(RESPONSE_TIMEOUT)?;
    if !finished.status.success() {
        return Err(RunError::Exited(finished.status));
    }
    if bad_line.is_none() {
        bad_line.clone_from(&finished.bad_line);
    }
    Ok(Run {
        initialize: initialized - spawned,
        tools_list: listed - spawned,
        peak_rss_kib,
        stdout_clean: finished.stdout_clean,
    })
}
