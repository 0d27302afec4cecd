//! What hark's terminal hooks (`hark hooks install`) cost an interactive
//! Claude Code session when no operator is attached (no daemon running):
//! `hark hook permission-request` and `hark hook post-tool-use`, fed the
//! input Claude Code feeds them, timed from spawn to exit, against
//! `/bin/true` spawned the same way (what any process start costs). The
//! three alternate run by run, so drift in the machine's load hits them
//! alike.
//!
//! The dialog's hook runs beside the dialog, which does not wait for it
//! (docs/src/agents/claude-code-interactive.md): it delays nothing the person
//! sees. The `PostToolUse` hook runs after every tool call: its time is
//! what each call pays. Every run must exit 0 and print nothing (no daemon:
//! the dialog is the terminal's, unchanged), else the bench fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hark_harness::Sandbox;
use serde_json::json;

use crate::stats::Summary;

/// Runs of each before the measured ones (the page cache).
const WARMUP_RUNS: usize = 3;
/// The most a hook may add over a process start, at the median.
const TARGET_ADDED_MS: f64 = 20.0;

/// Why the bench could not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error("cannot start {}", program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{what} (run {run}) exited {status} or printed {stdout:?}: with no daemon it must exit 0 and print nothing"
    )]
    Wrong {
        what: &'static str,
        run: usize,
        status: std::process::ExitStatus,
        stdout: String,
    },
}

/// What Claude Code feeds the hooks for a Bash call.
fn input(event: &str) -> String {
    json!({
        "session_id": "4b5fc9be-674d-43ed-9878-ffd87caa1f33",
        "transcript_path": "/home/u/.claude/projects/-work-api/4b5fc9be.jsonl",
        "cwd": "/work/api",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run the tests"},
    })
    .to_string()
}

/// The samples of each.
pub struct Results {
    pub runs: usize,
    pub baseline: Vec<Duration>,
    pub permission_request: Vec<Duration>,
    pub post_tool_use: Vec<Duration>,
}

/// Spawns `command` with `stdin` on its input; the time to its exit.
fn time(
    mut command: Command,
    program: &Path,
    stdin: &str,
    what: &'static str,
    run: usize,
) -> Result<Duration, HooksError> {
    let start = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| HooksError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if let Some(mut input) = child.stdin.take() {
        // `true` may exit before reading: a closed pipe is not an error here.
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|source| HooksError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    let took = start.elapsed();
    if !out.status.success() || !out.stdout.is_empty() {
        return Err(HooksError::Wrong {
            what,
            run,
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        });
    }
    Ok(took)
}

/// Runs the three `runs` times each (after the warm-up), alternating.
pub fn measure(sandbox: &Sandbox, runs: usize) -> Result<Results, HooksError> {
    let hark = sandbox.bin("hark");
    let truth = PathBuf::from("/bin/true");
    let (request, post) = (input("PermissionRequest"), input("PostToolUse"));
    let mut results = Results {
        runs,
        baseline: Vec::new(),
        permission_request: Vec::new(),
        post_tool_use: Vec::new(),
    };
    for run in 1..=WARMUP_RUNS + runs {
        let baseline = time(sandbox.command(&truth), &truth, &request, "/bin/true", run)?;
        let dialog = time(
            sandbox.hark(["hook", "permission-request"]),
            &hark,
            &request,
            "hark hook permission-request",
            run,
        )?;
        let after = time(
            sandbox.hark(["hook", "post-tool-use"]),
            &hark,
            &post,
            "hark hook post-tool-use",
            run,
        )?;
        if run > WARMUP_RUNS {
            results.baseline.push(baseline);
            results.permission_request.push(dialog);
            results.post_tool_use.push(after);
        }
    }
    Ok(results)
}

/// Prints the table, the target and a JSON line; whether the target holds.
pub fn report(r: &Results) -> bool {
    let (Some(base), Some(dialog), Some(after)) = (
        Summary::of_durations(&r.baseline),
        Summary::of_durations(&r.permission_request),
        Summary::of_durations(&r.post_tool_use),
    ) else {
        println!("  nothing was measured");
        return false;
    };
    println!(
        "terminal hooks with no daemon: {} runs each, alternating (after {WARMUP_RUNS} warm-up runs each)\n  ms from spawn to exit: median (min, p90)",
        r.runs
    );
    for (what, s) in [
        ("/bin/true", base),
        ("hark hook permission-request", dialog),
        ("hark hook post-tool-use", after),
    ] {
        println!(
            "  {what:<30} {:>30} {:>18}",
            crate::timing(s),
            format!("{:+.2}, {:+.2}", s.p50 - base.p50, s.p90 - base.p90)
        );
    }
    println!();
    let added = (dialog.p50 - base.p50).max(after.p50 - base.p50);
    let ok = added <= TARGET_ADDED_MS;
    println!("targets");
    println!(
        "  {:<48} {:>10}  {}",
        format!("a hook adds ≤ {TARGET_ADDED_MS} ms over a process start"),
        format!("{added:.2} ms"),
        crate::pass(ok)
    );
    let round = crate::stats::round3;
    let report = json!({
        "hooks": {
            "runs": r.runs,
            "warmup_runs": WARMUP_RUNS,
            "baseline_ms": base.to_json(),
            "permission_request_ms": dialog.to_json(),
            "post_tool_use_ms": after.to_json(),
        },
        "targets": {
            "added_ms_max": {"target": TARGET_ADDED_MS, "value": round(added), "pass": ok},
        },
    });
    println!("{report}");
    ok
}
