//! The Windows build of hark, run: `hark.exe` and the fake agents built
//! for `x86_64-pc-windows-gnu` and driven under Wine as real processes, on
//! what differs on Windows: named pipes; the job object a run holds its agent in,
//! which is how the daemon tells the agent's processes apart; console
//! control instead of signals; parking (the paused-run file and its lock);
//! the store, the doctor.
//!
//! The tier runs from `scripts/test-wine` (which builds the exes, prepares
//! a fresh Wine prefix with the `bcryptprimitives.dll` shim, and sets
//! `HARK_WINE_EXE` and `WINEPREFIX`); without `HARK_WINE_EXE` each case
//! returns at once, so `cargo test --workspace` on Linux builds it and
//! passes over it. Once on, a missing piece fails the case.
//!
//! Not representable under Wine, so compiled only (and unit-tested where
//! the logic is not the system's): a second Windows user (the SID refusal
//! of both ends, and what the pipe's owner-only DACL keeps out: Wine runs
//! every process as one user); a pipe made first by another program
//! (Wine 8.0 does not implement `FILE_FLAG_FIRST_PIPE_INSTANCE`: a second
//! first instance is created beside the first, measured with a ten-line
//! C probe); and the desktop app (WebView2).

mod installer;
mod support;

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use support::*;

/// The round trip an agent host makes: an MCP client spawns `hark.exe
/// mcp-operator-ask`, calls `ask`, and gets the operator's answer, carried
/// over the named pipe to `hark.exe serve`.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_asks_through_hark_exe_and_gets_the_answer() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let daemon = serve(&hbox, json!({"Which database?": "SQLite"}));
    let mut server = hbox.hark(["mcp-operator-ask"]);
    server
        .env("HARK_ASK_SOCK", hbox.socket())
        .env("HARK_SESSION_ID", "wine-session");
    let transport = TokioChildProcess::builder(tokio::process::Command::from(server))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
        .0;
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "ask");
    let Value::Object(args) = db() else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("ask").with_arguments(args))
        .await
        .unwrap();
    let text = &result.content[0].as_text().unwrap().text;
    assert_eq!(result.is_error, Some(false), "{text}");
    assert_eq!(text, r#"{"answers":{"Which database?":"SQLite"}}"#);
    client.cancel().await.unwrap();
    let items = hbox.inbox();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["session_id"], "wine-session");
    assert_eq!(items[0]["outcome"]["outcome"], "answered");
    drop(daemon);
}

/// An agent's own exit status is the run's, and what it left running (a
/// background process, a grandchild of `hark run`) ends with its job.
#[test]
fn a_run_passes_its_agents_exit_status_through_and_ends_what_it_left() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let mut run = hbox.run(&[], "BACKGROUND\nSHELL echo started\nEXIT 7");
    let left = background(&hbox, &run);
    assert_eq!(run.exit_code(), Some(7), "{}", run.stderr.tail(20));
    assert!(
        hark_harness::process::wait_gone(&[left], PATIENCE),
        "the agent's background process ended with its job"
    );
}

/// A run stopped (Ctrl-C: Wine turns SIGINT into the console's control
/// event) ends its agent's whole job, the grandchild the agent left too.
#[test]
fn a_stopped_run_ends_its_agents_whole_job() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let mut run = hbox.run(&[], "BACKGROUND\nSHELL echo started\nHANG");
    let left = background(&hbox, &run);
    let agent = hbox.logged()[0]["pid"].as_u64().unwrap();
    assert!(agent > 0);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&run.child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    run.stderr
        .wait_for("the run stopping", |l| l.contains("stopping the agent"));
    // TerminateJobObject's code, the agent's status: the run reports it.
    assert_eq!(run.exit_code(), Some(1), "{}", run.stderr.tail(20));
    assert!(
        hark_harness::process::wait_gone(&[left], PATIENCE),
        "the grandchild ended with the job"
    );
}

/// A process the agent detached (`start /b`: once its parent `cmd` has
/// exited, Windows keeps no tree above it) is still in the run's job, and
/// the daemon refuses it the operator's frames by that membership; the
/// operator outside the job is served meanwhile.
#[test]
fn a_helper_the_agent_detached_is_refused_by_its_job() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let daemon = serve(&hbox, json!({}));
    let out = hbox.sandbox.path("helper.txt");
    let helper = format!(
        "start \"\" /b cmd /C \"\"{}\" answer 0 --pick SQLite > \"{}\" 2>&1\"",
        hbox.exe("hark.exe"),
        win(&out)
    );
    let mut run = hbox.run(
        &[],
        &format!("SHELL {helper}\nSHELL echo helper started\nHANG"),
    );
    let refusal = daemon
        .stderr
        .wait("the helper refused", PATIENCE, |lines| {
            let refused = lines.iter().find(|l| l.text.contains("refused"));
            refused.map(|l| l.text.clone())
        })
        .unwrap_or_else(|e| panic!("{e}\nhark.exe run said:\n{}", run.stderr.tail(20)));
    assert!(
        refusal.contains("runs inside agent") && refusal.contains("is a run in progress"),
        "refused as inside the run: {refusal}"
    );
    // The next tool's use: the helper's tool is done (it waited for the
    // helper, which held its output).
    run.stderr.wait_until("the helper's tool done", |lines| {
        (lines.iter().filter(|l| l.text.contains("→ Bash")).count() >= 2).then_some(())
    });
    let said = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(said.contains("refused"), "the helper was told: {said}");
    // The operator, outside the job, is served while the run lives.
    let items = hbox.inbox();
    assert!(items.is_empty(), "{items:?}");
    assert!(matches!(run.child.try_wait(), Ok(None)), "the run lives on");
}

/// `hark.exe doctor` checks what Windows has, and speaks of no D-Bus or
/// StatusNotifier host, which a Windows user does not have.
#[test]
fn doctor_on_windows_checks_what_windows_has() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let out = hbox.output(&["doctor"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    for linux in [
        "D-Bus",
        "DBUS",
        "StatusNotifier",
        "XEmbed",
        "bubblewrap",
        "GNOME",
    ] {
        assert!(!said.contains(linux), "doctor speaks of {linux}: {said}");
    }
    assert!(
        said.contains("named pipe, owner-only by its DACL"),
        "{said}"
    );
    assert!(said.contains("job object"), "{said}");
}

/// A tool that starts a process out of the agent's job
/// (`CREATE_BREAKAWAY_FROM_JOB`) is refused by the system: the job allows
/// no breakaway.
#[test]
fn a_process_cannot_break_away_from_its_runs_job() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    // (cmd /C takes off the outer quotes: the line's own stay.)
    let tool = format!(
        "\"\"{}\" --fake-breakaway \"{}\" --version\"",
        hbox.exe("fake-claude.exe"),
        hbox.exe("hark.exe")
    );
    let mut run = hbox.run(&[], &format!("SHELL {tool}\nEXIT 0"));
    let said = run
        .stderr
        .wait("the tool's result", PATIENCE, |lines| {
            let result = lines
                .iter()
                .find(|l| l.text.contains("broke away") || l.text.contains("breakaway refused"));
            result.map(|l| l.text.clone())
        })
        .unwrap_or_else(|e| panic!("{e}\nthe agent's log: {:?}", hbox.logged()));
    assert!(said.contains("breakaway refused"), "{said}");
    assert!(
        said.contains("os error 5"),
        "refused as access denied: {said}"
    );
    assert_eq!(run.exit_code(), Some(0), "{}", run.stderr.tail(20));
}

/// The store outlives its daemon: an answer given before a restart is
/// listed after it.
#[tokio::test(flavor = "multi_thread")]
async fn the_store_keeps_answers_across_a_restart() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let daemon = serve(&hbox, json!({"Which database?": "SQLite"}));
    let request = hbox.sandbox.path("ask.json");
    std::fs::write(&request, db().to_string()).unwrap();
    let asked = hbox.output(&["ask", "--session", "kept", "--file", &win(&request)]);
    assert!(asked.status.success(), "{}", stderr(&asked));
    assert!(stdout(&asked).contains("SQLite"), "{}", stdout(&asked));
    drop(daemon);
    let again = serve(&hbox, json!({}));
    let items = hbox.inbox();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["session_id"], "kept");
    assert_eq!(items[0]["outcome"]["answers"]["Which database?"], "SQLite");
    drop(again);
}

/// A question nobody answers within the run's wait parks: the agent is
/// paused (it exits, saved), and the paused-run file is held, locked, by
/// its `hark run` (a second taker is refused); the late answer resumes the
/// agent with exactly that answer.
#[test]
fn a_parked_run_holds_its_file_and_a_late_answer_resumes_it() {
    let Some(wine) = wine() else { return };
    let hbox = Box::new(&wine);
    let daemon = serve(&hbox, json!({}));
    let ask = format!("ASK {}", db());
    let mut run = hbox.run(&["--session", "parked", "--timeout", "1"], &ask);
    let parked = daemon
        .stderr
        .wait_event("operator.question.parked", &[("session_id", "parked")]);
    let id = parked["question_id"].as_str().unwrap().to_owned();
    run.stderr
        .wait_for("the run waits parked", |l| l.contains("hark: parked"));
    let runs = hbox.output(&["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let record = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == "parked")
        .expect("the run is recorded")
        .clone();
    assert_eq!(record["status"], "parked", "{record}");
    let run_id = record["id"].as_str().unwrap();
    let taken = hbox.output(&["resume", run_id]);
    assert_eq!(taken.status.code(), Some(1), "{}", stderr(&taken));
    assert!(
        stderr(&taken).contains("held by a hark process"),
        "{}",
        stderr(&taken)
    );
    let answered = hbox.output(&["answer", &id, "--pick", "SQLite"]);
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(run.exit_code(), Some(0), "{}", run.stderr.tail(20));
    let said = run.stdout.all().join("\n");
    assert!(
        said.contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "the resumed agent received exactly the answer: {said}"
    );
}
