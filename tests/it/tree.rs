//! An agent cannot answer its own questions: while it waits on the
//! operator, the daemon refuses every operator frame (the inbox, a reply, a
//! subscription) from it and from anything it started, and the operator,
//! outside its process tree, still answers.
//!
//! The agent is a shell that starts `hark mcp-operator-ask` as its MCP
//! server (the test speaks MCP to it over the shell's stdin and stdout) and
//! runs `hark` commands as its tools would, when the test says so on a fifo;
//! it reports each command's exit status and output on another.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

use crate::inbox::ask_in_background;
use crate::support::*;
use serde_json::{Value, json};

/// What the agent does: reports its pid, starts its MCP server, then runs
/// each line read from `$GO` as a command and reports `NAME STATUS OUTPUT`.
const AGENT: &str = r#"
exec 4> "$DONE"
printf 'agent %s\n' "$$" >&4
# (A background command's stdin is /dev/null unless given back.)
exec 3<&0
"$HARK" mcp-operator-ask <&3 3<&- &
while read -r name rest < "$GO"; do
    out=$(eval "$rest" 2>&1)
    printf '%s %s %s\n' "$name" "$?" "$(printf %s "$out" | tr '\n' ' ')" >&4
done
"#;

/// A fifo both ends of which the test holds, so neither side blocks opening it.
pub(crate) fn fifo(path: &Path) -> File {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
    File::options().read(true).write(true).open(path).unwrap()
}

/// The shell agent of this file's tests, asking in `session`.
struct ShellAgent {
    mcp: Agent,
    pid: String,
    go: File,
    done: Lines,
}

impl ShellAgent {
    async fn start(sandbox: &Sandbox, session: &str) -> ShellAgent {
        let go = fifo(&sandbox.path("go"));
        let done = fifo(&sandbox.path("done"));
        let mut cmd = sandbox.command("sh");
        cmd.args(["-c", AGENT])
            .env("HARK", sandbox.bin("hark"))
            .env("GO", sandbox.path("go"))
            .env("DONE", sandbox.path("done"))
            .env("HARK_ASK_SOCK", sandbox.socket())
            .env("HARK_SESSION_ID", session);
        let transport = TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
            .0;
        let done = Lines::follow("the agent's reports", done);
        let mcp = Host::default().serve(transport).await.unwrap();
        let agent = done.wait_for("the agent's pid", |l| l.starts_with("agent "));
        let pid = agent["agent ".len()..].to_owned();
        ShellAgent { mcp, pid, go, done }
    }

    /// Runs `command` (shell words) inside the agent; its status and output.
    fn run(&mut self, name: &str, command: &str) -> (String, String) {
        use std::io::Write;
        writeln!(self.go, "{name} {command}").unwrap();
        let line = self
            .done
            .wait_for(name, |l| l.starts_with(&format!("{name} ")));
        let (status, output) = line[name.len() + 1..].split_once(' ').unwrap();
        (status.to_owned(), output.to_owned())
    }

    /// Asks `request` in the background; the call's result when it ends.
    fn ask(&self, request: Value) -> tokio::task::JoinHandle<rmcp::model::CallToolResult> {
        let peer = self.mcp.peer().clone();
        tokio::spawn(async move {
            let Value::Object(args) = request else {
                unreachable!()
            };
            peer.call_tool(CallToolRequestParams::new("ask").with_arguments(args))
                .await
                .unwrap()
        })
    }
}

fn refusal(agent_pid: &str) -> String {
    format!(
        "hark: refused: this process runs inside agent pid {agent_pid} (sh), which is waiting on the operator; an agent cannot answer its own questions"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_the_agent_started_can_neither_list_nor_answer_and_the_operator_still_answers() {
    let daemon = serve(json!({}));
    let mut agent = ShellAgent::start(&daemon.sandbox, "self-answer").await;
    let call = agent.ask(questions(&[db()]));
    let id = daemon.log.question_id("self-answer");

    let (status, output) = agent.run("inbox", r#""$HARK" inbox --json"#);
    assert_eq!(status, "2", "{output}");
    assert_eq!(output.trim(), refusal(&agent.pid));
    let (status, output) = agent.run(
        "answer",
        &format!(r#""$HARK" answer {id} --pick "Postgres (Recommended)""#),
    );
    assert_eq!(status, "2", "{output}");
    assert_eq!(output.trim(), refusal(&agent.pid));

    // The item is still pending, and the operator (the test, the agent's
    // parent) answers it.
    answer(&daemon.sandbox, &id, "SQLite");
    let result = call.await.unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);
    let items = inbox(&daemon.sandbox);
    assert_eq!(items[0]["replied_by"], "cli");

    // Nothing is pending any more: the agent's tools may look again.
    let (status, output) = agent.run("after", r#""$HARK" inbox --all --json"#);
    assert_eq!(status, "0", "{output}");
    agent.mcp.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_inside_the_agent_is_cut_off_before_its_question_reaches_it() {
    let daemon = serve(json!({}));
    let mut other = ask_in_background(&daemon, "elsewhere", questions(&[features()]));
    let elsewhere = daemon.log.question_id("elsewhere");
    let mut agent = ShellAgent::start(&daemon.sandbox, "self-follow").await;
    // Nothing of the agent's is pending yet: its tool may follow the inbox,
    // and sees the other item.
    writeln_go(&mut agent, r#"watch "$HARK" inbox --watch --json >&4"#);
    agent
        .done
        .wait_for("the follower's first event", |l| l.contains(&elsewhere));
    let call = agent.ask(questions(&[db()]));
    let id = daemon.log.question_id("self-follow");
    // It is told why, and ends.
    let ended = agent
        .done
        .wait_for("the follower to be cut off", |l| l.starts_with("watch "));
    assert_eq!(ended.trim_end(), format!("watch 2 {}", refusal(&agent.pid)));
    assert!(
        !agent.done.all().iter().any(|l| l.contains(&id)),
        "the follower saw the agent's own question: {:?}",
        agent.done.all()
    );
    answer(&daemon.sandbox, &id, "SQLite");
    assert_eq!(
        text(&call.await.unwrap()),
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    assert!(
        hark(&daemon.sandbox, &["skip", &elsewhere])
            .status
            .success()
    );
    other.wait().unwrap();
    agent.mcp.cancel().await.unwrap();
}

/// Sends the agent a line without waiting for its report.
fn writeln_go(agent: &mut ShellAgent, command: &str) {
    use std::io::Write;
    writeln!(agent.go, "{command}").unwrap();
}

/// An agent for `hark run`: it lists the inbox as one of its tools would,
/// reports on `$DONE`, and ends.
const LISTING_AGENT: &str = r#"#!/bin/sh
out=$("$HARK" inbox --all --json 2>&1)
printf 'inbox %s %s\n' "$?" "$(printf %s "$out" | tr '\n' ' ')" > "$DONE"
"#;

/// The listing agent, installed in `sandbox`, and the fifo it reports on.
fn listing_agent(sandbox: &Sandbox) -> (std::path::PathBuf, Lines) {
    use std::os::unix::fs::PermissionsExt;
    let script = sandbox.path("listing-agent");
    std::fs::write(&script, LISTING_AGENT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let done = Lines::follow("the agent's report", fifo(&sandbox.path("done")));
    (script, done)
}

/// What the listing agent reported: the status and output of its `hark inbox`.
fn listing_refused(done: &Lines) {
    let report = done.wait_for("the agent's report", |l| l.starts_with("inbox "));
    let (status, output) = report["inbox ".len()..].split_once(' ').unwrap();
    assert_eq!(status, "2", "{output}");
    assert!(
        output.starts_with("hark: refused: this process runs inside agent pid ")
            && output.trim_end().ends_with(
                "(hark), which is a run in progress; an agent cannot answer its own questions"
            ),
        "{output}"
    );
}

/// `hark run --no-confine [extra…]` of the [`listing_agent`], to its end
/// (or, detached, to its start); and where the agent says it is done.
/// Unconfined: the process-tree check is the second layer, for agents hark
/// could not confine (`confine` tests the first).
fn run_listing_agent(sandbox: &Sandbox, extra: &[&str]) -> (std::process::Output, Lines) {
    let (script, done) = listing_agent(sandbox);
    let out = sandbox
        .hark(["run", "--no-confine"])
        .args(extra)
        .arg("--agent")
        .arg(&script)
        .args(["--", "list the inbox"])
        .env("HARK", sandbox.bin("hark"))
        .env("DONE", sandbox.path("done"))
        .output()
        .unwrap();
    (out, done)
}

#[test]
fn a_run_the_operator_dispatched_cannot_read_the_inbox_while_it_lives() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let (detached, done) = run_listing_agent(sandbox, &["--detach"]);
    assert!(detached.status.success(), "{}", stdout(&detached));
    listing_refused(&done);
    let run_id = stdout(&detached).trim().to_owned();
    daemon
        .log
        .wait_event("dispatched run ended", &[("run_id", &run_id)]);
    // The operator, outside the run, is never refused.
    assert!(inbox(sandbox).is_empty());
}

#[test]
fn a_run_from_a_terminal_cannot_read_the_inbox_between_its_questions() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let (run, done) = run_listing_agent(sandbox, &[]);
    listing_refused(&done);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The operator's terminal, which started the run, is not inside it.
    assert!(inbox(sandbox).is_empty());
}
