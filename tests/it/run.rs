//! `hark run` end to end with a fake `claude -p` (tests/fake-claude) that
//! parses the real CLI's flags, speaks MCP to the servers in --mcp-config and
//! prints stream-json, against a real `hark serve` with a scripted prompter.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::*;
use serde_json::{Value, json};

#[test]
fn an_attached_run_gets_the_bridge_and_the_answer_reaches_the_agent() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let log = daemon.sandbox.path("fake.log");
    let out = hark_run(
        &daemon.sandbox,
        &log,
        &["--session", "attached", "--", &ask_line()],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{}",
        stdout(&out)
    );

    let runs = invocations(&log);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        flag(run, "--allowedTools").as_deref(),
        Some("mcp__operator__ask")
    );
    assert_eq!(
        flag(run, "--disallowedTools").as_deref(),
        Some("AskUserQuestion")
    );
    assert_eq!(flag(run, "--output-format").as_deref(), Some("stream-json"));
    assert!(
        run["argv"]
            .as_array()
            .unwrap()
            .contains(&json!("--verbose"))
    );
    assert!(
        flag(run, "--append-system-prompt")
            .unwrap()
            .contains("mcp__operator__ask")
    );
    assert!(flag(run, "--permission-prompt-tool").is_none());
    let socket = run["env"]["HARK_ASK_SOCK"].as_str().unwrap();
    assert_ne!(
        socket,
        daemon.sandbox.socket().to_str().unwrap(),
        "a per-call socket, not the app's"
    );
    assert_eq!(run["env"]["HARK_SESSION_ID"], "attached");
    // Given no --timeout, the run leaves the wait to the daemon and cuts
    // above the longest it gives (24 h).
    assert_eq!(run["env"]["MCP_TOOL_TIMEOUT"], "86460000");
    assert_eq!(
        run["env"]["FAKE_MARKER"], "inherited",
        "the caller's environment is inherited"
    );
    // The socket and the MCP config are gone with the run.
    let config = flag(run, "--mcp-config").unwrap();
    assert!(!Path::new(&config).exists() && !Path::new(socket).exists());
    assert!(!Path::new(socket).parent().unwrap().exists());

    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["session_id"], "attached");
    assert!(
        items[0]["run_id"].is_string(),
        "the item is filed under the run"
    );
}

#[test]
fn a_headless_run_gets_none_of_it_and_is_told_to_proceed() {
    let nobody = sandbox();
    let log = nobody.path("fake.log");
    let out = hark_run(&nobody, &log, &["--", "SAY on my own"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("on my own"));
    let run = &invocations(&log)[0];
    assert_eq!(flag(run, "--allowedTools"), None);
    assert_eq!(flag(run, "--mcp-config"), None);
    assert_eq!(
        flag(run, "--disallowedTools").as_deref(),
        Some("AskUserQuestion")
    );
    assert!(
        flag(run, "--append-system-prompt")
            .unwrap()
            .contains("No operator is available")
    );
    assert!(run["env"]["HARK_ASK_SOCK"].is_null());
}

#[test]
fn stdout_carries_the_result_once_and_the_progress_goes_to_stderr() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let log = daemon.sandbox.path("fake.log");
    let prompt = format!("SAY looking around\n{}\nSAY Using SQLite.", ask_line());
    let out = hark_run(&daemon.sandbox, &log, &["--", &prompt], "");
    let shown = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{shown}");
    // `out=$(hark run …)` gets the result, once: the agent's last text and
    // its result event are the same words.
    assert_eq!(stdout(&out), "Using SQLite.\n");
    assert!(shown.contains("looking around\n"), "{shown}");
    assert!(shown.contains("? asks the operator"), "{shown}");
    assert!(!shown.contains("Using SQLite."), "shown once: {shown}");
}

/// A run given no --timeout leaves the wait to the daemon (its
/// --ask-timeout over the config they share); one given a --timeout has it.
#[test]
fn a_run_given_no_timeout_leaves_the_wait_to_the_daemons_ask_timeout() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "ask_timeout_secs = 300\n").unwrap();
    let daemon = serve_in(&sandbox, json!({}), &["--ask-timeout", "1"]);
    let prompt = format!("{}\nSAY carried on", ask_line());
    let run = |session: &str, extra: &[&str]| {
        let log = sandbox.path(format!("{session}.log"));
        let child = sandbox
            .hark(["run", "--session", session, "--on-timeout", "proceed"])
            .args(extra)
            .arg("--agent")
            .arg(fake_claude())
            .args(["--", &prompt])
            .env("FAKE_CLAUDE_LOG", &log)
            .env("HARK_ASK_TIMEOUT", "7")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let asked = daemon
            .log
            .wait_event("operator.question.asked", &[("session_id", session)]);
        (child, asked["timeout_ms"].clone(), log)
    };

    let (child, filed_with, log) = run("plain", &[]);
    assert_eq!(
        filed_with, 1000,
        "the daemon's --ask-timeout, not the run's config"
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("timed out after 1 s"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agent = &invocations(&log)[0];
    assert!(
        agent["env"]["HARK_ASK_TIMEOUT"].is_null(),
        "neither the config's wait nor an inherited one: {agent}"
    );
    assert_eq!(agent["env"]["MCP_TOOL_TIMEOUT"], "86460000");

    let (child, filed_with, log) = run("given", &["--timeout", "0.5"]);
    assert_eq!(filed_with, 500, "the run's own --timeout");
    assert!(child.wait_with_output().unwrap().status.success());
    let agent = &invocations(&log)[0];
    assert_eq!(agent["env"]["HARK_ASK_TIMEOUT"], "0.5");
    assert_eq!(agent["env"]["MCP_TOOL_TIMEOUT"], "60500");
}

/// A read-only run turns on Claude Code's Bash sandbox, which refuses to
/// start without bwrap and socat: hark says so before starting the agent.
#[test]
fn a_read_only_run_without_bwrap_or_socat_is_refused_before_the_agent_starts() {
    let nobody = sandbox();
    let bin = hark_harness::scratch();
    let cases: [(&str, &[&str], &str); 2] = [
        ("neither", &[], "there is no bwrap or socat on PATH"),
        ("no-socat", &["bwrap"], "there is no socat on PATH"),
    ];
    for (case, present, said) in cases {
        let path = bin.path().join(case);
        std::fs::create_dir(&path).unwrap();
        for program in present {
            let installed = std::env::split_paths(&std::env::var_os("PATH").unwrap())
                .map(|dir| dir.join(program))
                .find(|p| p.exists())
                .unwrap_or_else(|| {
                    panic!("{program} is not installed (scripts/setup installs it)")
                });
            std::os::unix::fs::symlink(installed, path.join(program)).unwrap();
        }
        let log = nobody.path(format!("{case}.log"));
        let out = nobody
            .hark(["run", "--read-only", "--agent"])
            .arg(fake_claude())
            .args(["--", "SAY read it all"])
            .env("FAKE_CLAUDE_LOG", &log)
            .env("PATH", &path)
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{case}: {shown}");
        assert!(
            shown.contains(
                "--read-only turns on Claude Code's Bash sandbox, which needs bwrap and socat"
            ) && shown.contains(said),
            "{case}: {shown}"
        );
        assert!(
            shown.contains("hint: apt install bubblewrap socat"),
            "{case}: {shown}"
        );
        assert!(
            invocations(&log).is_empty(),
            "{case}: the agent did not start"
        );
        assert_eq!(stdout(&out), "", "{case}");
    }
    // Codex's read-only sandbox is its own: nothing of Claude Code's is asked for.
    let codex = bin.path().join("codex");
    std::os::unix::fs::symlink(bin_dir().join("fake-codex"), &codex).unwrap();
    let out = nobody
        .hark(["run", "--read-only", "--agent"])
        .arg(&codex)
        .args(["--", "SAY read it all"])
        .env("PATH", bin.path().join("neither"))
        .env("CODEX_HOME", nobody.path("codex-home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_timed_out_ask_reaches_the_agent_as_an_error_it_continues_past() {
    let daemon = serve(json!({}));
    let log = daemon.sandbox.path("fake.log");
    let prompt = format!("{}\nSAY carried on", ask_line());
    let out = hark_run(
        &daemon.sandbox,
        &log,
        &["--timeout", "0.3", "--on-timeout", "proceed", "--", &prompt],
        "",
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("? asks the operator: [Database] Which database?"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("! {NOT_ANSWERED} (timed out after 0.3 s")),
        "{stderr}"
    );
    assert!(stdout(&out).contains("carried on"));
}

/// A `hark run` in `session` whose agent starts a background process,
/// asks, then hangs until killed; returned once the question is asked, with
/// the agent's recorded start (and `background_pid`).
fn hanging_run(daemon: &Daemon, session: &str) -> (std::process::Child, Value) {
    let log = daemon.sandbox.path(format!("{session}.log"));
    let prompt = format!("BACKGROUND\n{}\nHANG", ask_line());
    let run = daemon
        .sandbox
        .hark(["run", "--session", session, "--agent"])
        .arg(fake_claude())
        .args(["--", &prompt])
        .env("FAKE_CLAUDE_LOG", &log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    daemon.log.question_id(session);
    let lines = invocations(&log);
    let mut agent = lines[0].clone();
    // Their pids out here (confined, each is pid 2 or 3 of its namespace).
    let host = |identity: &Value| {
        hark_harness::process::host_pid(identity)
            .unwrap_or_else(|| panic!("no process {identity} is running"))
    };
    agent["pid"] = host(&agent["process"]).into();
    agent["background_pid"] = host(&lines[1]["background"]).into();
    (run, agent)
}

/// Whether the agent's background process has ended (waiting a little for
/// a signal to land).
fn background_ended(agent: &Value) -> bool {
    let pid = agent["background_pid"].as_u64().unwrap() as u32;
    let ended = hark_harness::process::wait_gone(&[pid], std::time::Duration::from_secs(5));
    if !ended {
        let _ = hark_harness::process::terminate(pid);
    }
    ended
}

#[test]
fn a_killed_agent_cancels_its_question_and_leaves_nothing_behind() {
    let daemon = serve(json!({}));
    let (run, agent) = hanging_run(&daemon, "killed");
    let socket = PathBuf::from(agent["env"]["HARK_ASK_SOCK"].as_str().unwrap());
    assert!(socket.exists());
    let killed = std::time::Instant::now();
    assert!(
        Command::new("kill")
            .args(["-9", &agent["pid"].to_string()])
            .status()
            .unwrap()
            .success()
    );
    let event = daemon
        .log
        .wait_event("operator.question.unanswered", &[("session_id", "killed")]);
    assert_eq!(event["outcome"], "cancelled");
    assert!(
        killed.elapsed() < std::time::Duration::from_secs(1),
        "settled {:?} after the kill",
        killed.elapsed()
    );
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + 9),
        "the agent's death is passed through"
    );
    assert!(
        !socket.parent().unwrap().exists(),
        "the run's directory is removed"
    );
    assert!(
        background_ended(&agent),
        "what the dead agent left running is ended with its process group"
    );
}

#[test]
fn the_directory_of_a_run_killed_by_sigkill_is_swept_by_the_next_run() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let (mut run, agent) = hanging_run(&daemon, "sigkilled");
    let socket = PathBuf::from(agent["env"]["HARK_ASK_SOCK"].as_str().unwrap());
    run.kill().unwrap();
    run.wait().unwrap();
    // Nothing can catch SIGKILL: the directory is left behind (the
    // confined agent dies with its sandbox; an unconfined one, in its own
    // process group, would be left too).
    let _ = hark_harness::process::terminate(agent["pid"].as_u64().unwrap() as u32);
    let _ = hark_harness::process::terminate(agent["background_pid"].as_u64().unwrap() as u32);
    assert!(socket.parent().unwrap().exists());
    // A live run's directory is not touched by the sweep.
    let (live, live_agent) = hanging_run(&daemon, "alive");
    let live_socket = PathBuf::from(live_agent["env"]["HARK_ASK_SOCK"].as_str().unwrap());

    let log = daemon.sandbox.path("next.log");
    let out = hark_run(&daemon.sandbox, &log, &["--", "SAY next"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !socket.parent().unwrap().exists(),
        "the next run removed the dead run's directory"
    );
    assert!(live_socket.exists(), "the live run's socket is kept");
    assert!(
        Command::new("kill")
            .arg(live.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let out = live.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
    assert!(background_ended(&live_agent));
}

#[test]
fn a_run_told_to_stop_ends_its_agent_and_leaves_nothing_behind() {
    for (signal, number) in [("TERM", 15), ("HUP", 1)] {
        let daemon = serve(json!({}));
        let session = format!("stopped-{signal}");
        let (run, agent) = hanging_run(&daemon, &session);
        let agent_pid = agent["pid"].to_string();
        let socket = PathBuf::from(agent["env"]["HARK_ASK_SOCK"].as_str().unwrap());
        let kill = |signal: &str, pid: &str| {
            Command::new("kill")
                .args([&format!("-{signal}"), pid])
                .status()
                .unwrap()
                .success()
        };
        assert!(kill(signal, &run.id().to_string()));
        let out = run.wait_with_output().unwrap();
        // Whatever the outcome, no agent is left behind by this test.
        let agent_left = Path::new(&format!("/proc/{agent_pid}")).exists();
        kill("KILL", &agent_pid);
        assert_eq!(
            out.status.code(),
            Some(128 + number),
            "SIG{signal}: hark run ends with the signal's status"
        );
        assert!(!agent_left, "SIG{signal}: the agent is stopped");
        assert!(
            !socket.parent().unwrap().exists(),
            "SIG{signal}: the run's directory is removed"
        );
        assert!(
            background_ended(&agent),
            "SIG{signal}: what the agent started is stopped with it"
        );
        let event = daemon
            .log
            .wait_event("operator.question.unanswered", &[("session_id", &session)]);
        assert_eq!(event["outcome"], "cancelled");
        let runs = daemon.sandbox.hark(["runs", "--json"]).output().unwrap();
        let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
        assert_eq!(runs[0]["status"], "failed", "SIG{signal}: {runs}");
        assert_eq!(runs[0]["exit_code"], 128 + number, "SIG{signal}: {runs}");
    }
}

#[test]
fn a_prompt_too_long_for_a_command_line_is_named_not_blamed_on_a_missing_agent() {
    let sandbox = sandbox();
    // Two words a command line takes, one prompt (joined) it does not: Linux
    // caps a single argument at 128 KiB.
    let half = "x".repeat(100 * 1024);
    let out = sandbox
        .hark(["run", "--agent"])
        .arg(fake_claude())
        .args(["--", &half, &half])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("longer than the system lets"), "{stderr}");
    assert!(!stderr.contains("install Claude Code"), "{stderr}");
}

#[test]
fn wrap_merges_the_users_flags_without_duplicating_them() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let log = daemon.sandbox.path("fake.log");
    let theirs = daemon.sandbox.path("theirs.json");
    let other = json!({"mcpServers": {"other": {"command": bin_dir().join("hark"), "args": ["mcp-operator-ask"]}}});
    std::fs::write(&theirs, other.to_string()).unwrap();
    let fake = fake_claude();
    let prompt = ask_line();
    let out = daemon
        .sandbox
        .hark(["run", "--wrap", "--"])
        .arg(&fake)
        .args(["-p", &prompt, "--output-format", "stream-json", "--verbose"])
        .args([
            "--allowedTools",
            "Read,Edit",
            "--disallowedTools",
            "AskUserQuestion",
            "--mcp-config",
        ])
        .arg(&theirs)
        .env("FAKE_CLAUDE_LOG", &log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#));
    let run = &invocations(&log)[0];
    let argv = run["argv"].as_array().unwrap();
    let count = |f: &str| argv.iter().filter(|a| *a == f).count();
    assert_eq!(
        (
            count("--allowedTools"),
            count("--disallowedTools"),
            count("--mcp-config")
        ),
        (1, 1, 1)
    );
    assert_eq!(
        flag(run, "--allowedTools").as_deref(),
        Some("Read,Edit,mcp__operator__ask")
    );
    assert_eq!(
        flag(run, "--disallowedTools").as_deref(),
        Some("AskUserQuestion")
    );
    assert_eq!(argv[0], "-p");
    assert_eq!(argv[1], prompt.as_str());
}

#[test]
fn converse_resumes_the_agents_session_turn_after_turn() {
    let nobody = sandbox();
    let log = nobody.path("fake.log");
    let out = hark_run(
        &nobody,
        &log,
        &["--verb", "converse", "--", "SAY first turn"],
        "SAY second turn\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = invocations(&log);
    assert_eq!(runs.len(), 2);
    assert_eq!(flag(&runs[0], "--resume"), None);
    let first_session = runs[0]["session"].as_str().unwrap().to_owned();
    assert_eq!(flag(&runs[1], "--resume"), Some(first_session));
    assert_eq!(flag(&runs[1], "-p").as_deref(), Some("SAY second turn"));
    assert!(stdout(&out).contains("first turn") && stdout(&out).contains("second turn"));
}

#[test]
fn the_agents_exit_status_is_passed_through() {
    let nobody = sandbox();
    let out = hark_run(&nobody, &nobody.path("fake.log"), &["--", "EXIT 7"], "");
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn a_nested_sub_agents_question_arrives_through_the_same_run() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let log = daemon.sandbox.path("fake.log");
    let prompt = format!("NESTED {}", questions(&[db()]));
    let out = hark_run(
        &daemon.sandbox,
        &log,
        &["--session", "nested", "--", &prompt],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#));
    let runs = invocations(&log);
    assert_eq!(runs.len(), 2, "the agent and its sub-agent");
    assert_eq!(
        runs[0]["env"]["HARK_ASK_SOCK"],
        runs[1]["env"]["HARK_ASK_SOCK"]
    );
    let items = inbox(&daemon.sandbox);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["session_id"], "nested");
    assert!(items[0]["run_id"].is_string());
    // Filed under the sub-agent its host's hook named, and said so.
    let sub_agent = &items[0]["asker"]["sub_agent"];
    assert_eq!(sub_agent["kind"], "general-purpose", "{}", items[0]);
    assert!(sub_agent["id"].as_str().unwrap().starts_with("afake"));
    let run = &items[0]["run_id"].as_str().unwrap()[..8];
    let listed = hark(&daemon.sandbox, &["inbox", "--all"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(&format!("sub-agent general-purpose of run {run} in "))
            && listed.contains(" · session nested"),
        "{listed}"
    );
}

/// `hark runs --json` against the daemon, parsed.
pub(crate) fn runs(daemon: &Daemon) -> Vec<Value> {
    let out = hark(&daemon.sandbox, &["runs", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The run of `session`. Every state is settled by the time the test looks:
/// `hark run` records its end before it exits, "waiting" follows from the
/// pending item, and a killed run's process is gone once reaped.
pub(crate) fn run_of(daemon: &Daemon, session: &str) -> Value {
    let all = runs(daemon);
    all.iter()
        .find(|r| r["session_id"] == session)
        .cloned()
        .unwrap_or_else(|| panic!("no run of {session}: {all:?}"))
}

#[test]
fn runs_are_recorded_waiting_finished_or_failed_with_their_items() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let log = daemon.sandbox.path("fake.log");
    let prompt = format!("{}\nEXIT 4", ask_line());
    let out = hark_run(
        &daemon.sandbox,
        &log,
        &["--session", "s-failed", "--", &prompt],
        "",
    );
    assert_eq!(out.status.code(), Some(4));
    let failed = run_of(&daemon, "s-failed");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["exit_code"], 4);
    assert_eq!(
        (failed["items"].as_u64(), failed["pending"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(failed["command"].as_str().unwrap().contains("EXIT 4"));
    // The agent's last result and the run's cost are kept on the record.
    assert_eq!(
        failed["result"],
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    assert_eq!(failed["cost_usd"], 0.0);

    // A question the script leaves to the operator: the run waits on them.
    let region = question("Which region?", "Region", &["eu", "us"], false);
    let prompt = format!("ASK {}", questions(&[region]));
    let waiting = spawn_run(&daemon.sandbox, &["--session", "s-waiting"], &prompt);
    let id = daemon.log.question_id("s-waiting");
    let run = run_of(&daemon, "s-waiting");
    assert_eq!(run["status"], "waiting");
    assert_eq!(run["pending"], 1);
    assert!(
        hark(&daemon.sandbox, &["answer", &id, "--pick", "eu"])
            .status
            .success()
    );
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success());
    let finished = run_of(&daemon, "s-waiting");
    assert_eq!(finished["status"], "finished");
    assert_eq!(finished["exit_code"], 0);
    assert_eq!(finished["pending"], 0);

    // A `hark run` killed mid-question is not left "running" for ever.
    let mut killed = spawn_run(&daemon.sandbox, &["--session", "s-killed"], &prompt);
    daemon.log.question_id("s-killed");
    killed.kill().unwrap();
    killed.wait().unwrap();
    let gone = run_of(&daemon, "s-killed");
    assert_eq!(gone["status"], "failed");
    assert!(gone["exit_code"].is_null(), "it never reported an end");
}

/// `hark run --detach ARGS -- PROMPT` with the fake agent, against `daemon`.
fn detach(daemon: &Daemon, args: &[&str], prompt: &str) -> std::process::Output {
    daemon
        .sandbox
        .hark(["run", "--detach", "--agent"])
        .arg(fake_claude())
        .args(args)
        .args(["--", prompt])
        // The run gets the caller's environment, not the daemon's.
        .env("FAKE_CLAUDE_LOG", daemon.sandbox.path("fake.log"))
        .env("FAKE_MARKER", "the caller's")
        .output()
        .unwrap()
}

/// The id `hark run --detach` printed, and the daemon's event for its end.
fn run_and_end(daemon: &Daemon, detached: &std::process::Output) -> (String, Value) {
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    let run_id = stdout(detached).trim().to_owned();
    let ended = daemon
        .log
        .wait_event("dispatched run ended", &[("run_id", &run_id)]);
    (run_id, ended)
}

#[test]
fn a_detached_run_is_the_daemons_and_its_answer_reaches_the_agent() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let work = hark_harness::scratch();
    let out = detach(
        &daemon,
        &[
            "--session",
            "detached",
            "--cwd",
            work.path().to_str().unwrap(),
        ],
        &ask_line(),
    );
    // The caller is told the run's id at once and goes its way.
    let (run_id, ended) = run_and_end(&daemon, &out);
    assert_eq!(ended["exit_code"], 0);

    let run = run_of(&daemon, "detached");
    assert_eq!(run["id"], run_id.as_str());
    assert_eq!(run["status"], "finished");
    assert_eq!(run["cwd"], work.path().to_str().unwrap());
    assert_eq!(run["items"], 1);
    assert_eq!(run["result"], r#"{"answers":{"Which database?":"SQLite"}}"#);
    let items = inbox(&daemon.sandbox);
    assert_eq!(items[0]["run_id"], run_id.as_str());
    assert_eq!(items[0]["session_id"], "detached");

    // The agent ran in the caller's environment (the daemon has no marker).
    let agents = invocations(&daemon.sandbox.path("fake.log"));
    assert_eq!(agents[0]["env"]["FAKE_MARKER"], "the caller's");

    // What the run printed is kept, for the operator only.
    let log = daemon
        .sandbox
        .data_dir()
        .join("runs")
        .join(format!("{run_id}.log"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("the operator is attached"), "{text}");
    assert!(
        text.contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{text}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// Every option of `hark run --detach` reaches the run the daemon starts:
/// the options travel whole, not flag by flag (issue 42: `--on-timeout
/// proceed` was dropped, and the detached run parked instead).
#[test]
fn a_detached_run_keeps_its_on_timeout() {
    let daemon = serve(json!({}));
    let out = detach(
        &daemon,
        &[
            "--session",
            "detached-proceeds",
            "--timeout",
            "1",
            "--on-timeout",
            "proceed",
        ],
        &ask_line(),
    );
    let (run_id, ended) = run_and_end(&daemon, &out);
    assert_eq!(ended["exit_code"], 0);
    let run = run_of(&daemon, "detached-proceeds");
    assert_eq!(run["status"], "finished", "{run}");
    // It never parked: the agent started once, with no park hook, and
    // was told its question timed out.
    let starts: Vec<Value> = invocations(&daemon.sandbox.path("fake.log"))
        .into_iter()
        .filter(|line| line.get("argv").is_some())
        .collect();
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert!(
        flag(&starts[0], "--settings").is_none(),
        "no park hook: {}",
        starts[0]
    );
    let log = daemon
        .sandbox
        .data_dir()
        .join("runs")
        .join(format!("{run_id}.log"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("operator did not answer"), "{text}");
}

#[test]
fn only_the_newest_dispatched_runs_keep_their_logs() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "run_log_limit = 1\n").unwrap();
    let daemon = serve_in(&sandbox, json!({}), &[]);
    let mut ids = Vec::new();
    for n in 0..3 {
        let session = format!("run-{n}");
        let out = detach(&daemon, &["--session", &session], "SAY done");
        let (run_id, ended) = run_and_end(&daemon, &out);
        assert_eq!(ended["exit_code"], 0);
        ids.push(run_id);
    }
    let logs = daemon.sandbox.data_dir().join("runs");
    let kept = |id: &str| logs.join(format!("{id}.log")).exists();
    // Starting the third found the first older than the newest one.
    assert!(!kept(&ids[0]), "the oldest run's log is removed");
    assert!(kept(&ids[1]) && kept(&ids[2]));
    // The runs' records stay: the history has its own limit.
    assert_eq!(runs(&daemon).len(), 3);
}

#[test]
fn a_dispatch_the_daemon_cannot_start_is_refused_plainly() {
    let daemon = serve(json!({}));
    let refused = |args: &[&str], prompt: &str, says: &str| {
        let out = detach(&daemon, args, prompt);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says:?} not in {stderr}");
    };
    refused(&[], "  ", "the prompt is empty");
    refused(
        &["--cwd", "/no/such/dir"],
        "hello",
        "/no/such/dir is not an existing",
    );
    let intake = daemon.sandbox.path("intake.json");
    std::fs::write(
        &intake,
        json!({"questions": [{"id": "scope", "prompt": "Scope?", "options": [{"value": "a", "label": "A"}]}]})
            .to_string(),
    )
    .unwrap();
    refused(
        &["--intake", intake.to_str().unwrap()],
        "hello",
        "the intake is not valid",
    );
    assert!(runs(&daemon).is_empty(), "nothing started");

    // With nobody serving, the caller is told how to get someone.
    let out = hark(&sandbox(), &["run", "--detach", "--", "hello"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("hint: start `hark app`"));
}

#[test]
fn a_detached_conversation_asks_the_operator_for_each_next_message() {
    let said = |text: &str| format!("The agent said: {text}\n\nYour next message to the agent?");
    let daemon = serve(json!({
        said("first turn"): {"text": "SAY second turn"},
        said("second turn"): "End the conversation",
    }));
    let out = detach(
        &daemon,
        &["--verb", "converse", "--session", "talk"],
        "SAY first turn",
    );
    let (_, ended) = run_and_end(&daemon, &out);
    assert_eq!(ended["exit_code"], 0);

    // The operator's message started the second turn, resuming the agent's session.
    let turns = invocations(&daemon.sandbox.path("fake.log"));
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(
        flag(&turns[1], "--resume"),
        turns[0]["session"].as_str().map(str::to_owned)
    );
    assert_eq!(flag(&turns[1], "-p").as_deref(), Some("SAY second turn"));
    let run = run_of(&daemon, "talk");
    assert_eq!(run["status"], "finished");
    assert_eq!(run["items"], 2, "one question per turn");
    assert_eq!(run["result"], "second turn");
}

#[test]
fn a_dispatched_run_that_dies_before_it_starts_is_recorded_failed_with_why() {
    let daemon = serve(json!({}));
    // The operator breaks the config after the daemon read it: the run's own
    // `hark run` cannot start, and says why in its log.
    std::fs::write(daemon.sandbox.config(), "ask_timeout = [").unwrap();
    let out = detach(&daemon, &["--session", "broken"], "hello");
    let (run_id, ended) = run_and_end(&daemon, &out);
    assert_eq!(ended["exit_code"], 1);
    let all = runs(&daemon);
    let run = all
        .iter()
        .find(|r| r["id"] == run_id.as_str())
        .unwrap_or_else(|| panic!("the run was not recorded: {all:?}"));
    assert_eq!(run["status"], "failed");
    assert_eq!(run["exit_code"], 1);
    assert_eq!(run["session_id"], "broken");
    assert!(
        run["result"].as_str().unwrap().contains("no-config.toml"),
        "the record says why: {run}"
    );
}
