//! One turn of the agent: its process, and its `stream-json` output shown:
//! progress on stderr, the result on stdout, once (Codex's `--json`:
//! [`super::codex`]; OpenCode's `--format json`: [`super::opencode`];
//! Gemini CLI's `stream-json`: [`super::gemini`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use hark_core::agent::{ASK_TOOL, AgentKind, Composed};
use hark_core::confine::Plan;

use super::{RunError, StopSignals};

/// What one turn of the agent reported.
#[derive(Debug, Default)]
pub struct Turn {
    /// The agent's own session id, to resume.
    pub session: Option<String>,
    pub status: i32,
    /// Its final result text and cost, from the `result` event.
    pub result: Option<String>,
    pub cost_usd: f64,
    /// A stop signal ended it (`status` is then 128 + the signal).
    stopped: bool,
    /// It paused on this tool use (a question parked), to be resumed.
    deferred: Option<String>,
    /// The agent's latest text, held until what follows says whether it
    /// is the result (stdout) or progress (stderr): the final text and the
    /// result are the same words, which stdout carries once.
    held: Option<String>,
}

/// How a turn ended, for the run to go on or end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// A stop signal ended it: so does the run.
    Stopped,
    /// It paused on this tool use (a question parked), to be resumed.
    Deferred(String),
    /// It ran to its end.
    Done,
}

impl Turn {
    /// How it ended; a stop signal outranks a pause.
    pub(super) fn ending(&self) -> Ending {
        match (self.stopped, &self.deferred) {
            (true, _) => Ending::Stopped,
            (false, Some(tool_use_id)) => Ending::Deferred(tool_use_id.clone()),
            (false, None) => Ending::Done,
        }
    }

    /// Holds the agent's latest text, showing the one held before it as
    /// progress.
    pub(super) fn hold(&mut self, text: &str) {
        self.release();
        self.held = Some(text.to_owned());
    }

    /// Shows the held text as progress: something else came after it.
    pub(super) fn release(&mut self) {
        if let Some(text) = self.held.take() {
            eprintln!("{text}");
        }
    }

    /// Prints `result` on stdout, the one place it goes; held text that
    /// says the same is not shown again.
    pub(super) fn print_result(&mut self, result: &str) {
        if self.held.as_deref() == Some(result) {
            self.held = None;
        }
        self.release();
        println!("{result}");
    }

    /// Adds `more` to the held text (a piece of the same message), and
    /// returns all of it.
    pub(super) fn extend_held(&mut self, more: &str) -> String {
        let held = self.held.get_or_insert_with(String::new);
        held.push_str(more);
        held.clone()
    }

    /// Prints the held text on stdout, as the result (Codex's last message
    /// of a completed turn).
    pub(super) fn print_held(&mut self) {
        if let Some(text) = self.held.take() {
            println!("{text}");
        }
    }
}

/// The servers in the user's own `--mcp-config` values (files or JSON).
pub fn existing_servers(configs: &[String]) -> Result<BTreeMap<String, Value>, RunError> {
    let mut servers = BTreeMap::new();
    for config in configs {
        let text = if config.trim_start().starts_with('{') {
            config.clone()
        } else {
            std::fs::read_to_string(config).map_err(|source| RunError::McpConfigRead {
                config: config.clone(),
                source,
            })?
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|source| RunError::McpConfigJson {
                config: config.clone(),
                source,
            })?;
        if let Some(map) = value.get("mcpServers").and_then(Value::as_object) {
            servers.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    Ok(servers)
}

/// The user's own `--settings` value (a file or JSON) as JSON, so a
/// read-only run can merge its sandbox into it.
pub fn existing_settings(settings: &str) -> Result<String, RunError> {
    let text = if settings.trim_start().starts_with('{') {
        settings.to_owned()
    } else {
        std::fs::read_to_string(settings).map_err(|source| RunError::SettingsRead {
            settings: settings.to_owned(),
            source,
        })?
    };
    serde_json::from_str::<Value>(&text).map_err(|source| RunError::SettingsJson {
        settings: settings.to_owned(),
        source,
    })?;
    Ok(text)
}

/// Starts the agent of `setup`'s run, confined and held as it says, in
/// `cwd` (else here), shows its stream, and waits for it.
pub async fn run_agent(
    composed: Composed,
    setup: &super::Setup,
    cwd: Option<&PathBuf>,
    env: Option<&BTreeMap<String, String>>,
    mut stop: StopSignals,
) -> Result<Turn, RunError> {
    let (confine, job, kind) = (&setup.confine, &setup.job, setup.kind);
    let command = agent_command(&composed, confine, cwd, env);
    let mut child =
        hark_core::confine::spawn(confine, command).map_err(|source| RunError::Spawn {
            program: composed.program.clone(),
            source,
        })?;
    let tree = job.hold(&mut child).await?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| RunError::Agent(std::io::Error::other("the agent has no stdout")))?;
    let mut lines = BufReader::new(stdout).lines();
    let mut turn = Turn::default();
    let mut stopped_by = None;
    let mut interrupted = false;
    // Windows: the agent's exit, seen as it happens (below).
    let mut exited = None;
    let mut interrupt = Interrupt::listen();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => match kind {
                    AgentKind::Claude => show(&line, &mut turn),
                    AgentKind::Codex => super::codex::show(&line, &mut turn),
                    AgentKind::Opencode => super::opencode::show(&line, &mut turn),
                    AgentKind::Gemini => super::gemini::show(&line, &mut turn),
                },
                Ok(None) | Err(_) => break,
            },
            // Windows hands a new process every inheritable handle of its
            // parent's, so what the agent left running (a tool's
            // background process) may hold its output open after it exits:
            // its exit ends the job, and with it what holds the output,
            // whose last lines are then read to their end.
            status = child.wait(), if LEFT_HOLD_OUTPUT && exited.is_none() => {
                exited = Some(status);
                tree_end(&tree);
            }
            () = interrupt.arrived() => {
                eprintln!("hark: interrupted; stopping the agent");
                interrupted = true;
                break;
            }
            received = stop.arrived() => {
                eprintln!("hark: stopped by {}; stopping the agent", received.name);
                stopped_by = Some(received);
                break;
            }
        }
    }
    // Text no result followed (the agent failed, or was stopped) was
    // progress.
    turn.release();
    // Reaped before the run goes on or ends: no agent outlives its run.
    let confined = !confine.prefix.is_empty();
    let stopping = interrupted || stopped_by.is_some();
    let status = match exited {
        Some(status) => status,
        None => end_group(&mut child, tree, confined, stopping).await,
    }
    .map_err(RunError::Agent)?;
    turn.status = match stopped_by {
        Some(received) => received.exit_code(),
        None => exit_code(status),
    };
    turn.stopped = stopped_by.is_some();
    if kind == AgentKind::Codex
        && let Some(dir) = cwd.cloned().or_else(|| std::env::current_dir().ok())
    {
        super::codex::explain_untrusted(&composed.args, &dir, &turn);
    }
    if kind == AgentKind::Gemini {
        super::gemini::explain_untrusted(&turn);
    }
    Ok(turn)
}

/// The agent's command line, confined as `confine` says, in `cwd` and
/// `env` when they are given.
fn agent_command(
    composed: &Composed,
    confine: &Plan,
    cwd: Option<&PathBuf>,
    env: Option<&BTreeMap<String, String>>,
) -> Command {
    // On Windows as PATH finds it: `claude` is npm's `claude.cmd`, which a
    // bare name does not start there.
    let program = std::path::PathBuf::from(&composed.program);
    let program = match cfg!(windows) {
        true => hark_core::platform::find_program(&program).unwrap_or(program),
        false => program,
    };
    // Confined, the agent is the last word of the mechanism's command line.
    let mut command = match confine.prefix.split_first() {
        Some((mechanism, args)) => {
            let mut command = Command::new(mechanism);
            command.args(args).arg(&program);
            command
        }
        None => Command::new(&program),
    };
    // In `env` when it is given (a resumed run's: the one it started with),
    // else in this process's; and with hark's variables, of which the
    // bounded wait is this run's to give or leave to the daemon, never one
    // inherited. Its stdin is closed: `codex exec` and `opencode run` read
    // it to its end before they start, and `gemini -p` exits only once it
    // is closed.
    if let Some(env) = env {
        command.env_clear().envs(env);
    }
    command
        .args(&composed.args)
        .env_remove(hark_core::env::ASK_TIMEOUT)
        .envs(&composed.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env_remove(hark_core::env::RUN_ID)
        .kill_on_drop(true);
    // Its own process group, so that stopping it stops what it started
    // (its MCP servers, the shells of its tools, their children).
    #[cfg(unix)]
    command.process_group(0);
    // Windows: started suspended, and let run once it is in the run's job,
    // so that nothing it starts is born outside.
    #[cfg(windows)]
    command.creation_flags(hark_core::platform::START_SUSPENDED);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
}

/// Ctrl-C, listened to for the whole turn. A listener made afresh at each
/// wait (`tokio::signal::ctrl_c()`) would leave gaps between two waits, in
/// which an interrupt is lost on Unix, and on Windows ends `hark run`
/// outright: tokio hands the console's event to the default handler when
/// nobody listens at that instant (seen under Wine).
struct Interrupt(Option<InterruptStream>);

#[cfg(unix)]
type InterruptStream = tokio::signal::unix::Signal;
#[cfg(windows)]
type InterruptStream = tokio::signal::windows::CtrlC;

impl Interrupt {
    fn listen() -> Interrupt {
        #[cfg(unix)]
        let stream = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
        #[cfg(windows)]
        let stream = tokio::signal::windows::ctrl_c();
        Interrupt(stream.ok())
    }

    /// Completes at the next interrupt (never, if none can be listened to).
    async fn arrived(&mut self) {
        let arrived = match self.0.as_mut() {
            Some(stream) => stream.recv().await.is_some(),
            None => false,
        };
        if !arrived {
            std::future::pending::<()>().await;
        }
    }
}

/// Whether what the agent left running can hold its output open (Windows,
/// where handles are inherited wholesale; on Unix only its stdio is).
const LEFT_HOLD_OUTPUT: bool = cfg!(windows);

/// How long the agent has to end after SIGTERM before its group is killed
/// (Windows: to exit after closing its output, before its job is ended).
const GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Ends the agent's process group and reaps the agent: SIGTERM to the
/// group, and SIGKILL to what is left of it once the agent has ended or
/// [`GRACE`] has passed. After an agent that ended by itself this only
/// stops what it left running (a background shell), which would otherwise
/// go on, unwatched, after the turn.
///
/// Confined, the child is bubblewrap, whose init (the sandbox's PID 1)
/// starts the agent in the session and group `--new-session` made: the
/// group the agent is really in (its `getpgid`, read from here) gets the
/// SIGTERM, which the init, a namespace's PID 1 with no handler, does not
/// take; past the grace the init gets the SIGKILL, which ends the PID
/// namespace whole.
#[cfg(unix)]
async fn end_group(
    child: &mut Child,
    _group: Tree,
    confined: bool,
    _stopping: bool,
) -> std::io::Result<std::process::ExitStatus> {
    use rustix::process::{Pid, Signal, getpgid, kill_process_group};
    let Some(id) = child.id() else {
        // Already reaped.
        return child.wait().await;
    };
    let pid = |id: u32| i32::try_from(id).ok().and_then(Pid::from_raw);
    let group = pid(id);
    // Confined: bubblewrap exits once its init has, and the kernel ends a
    // PID namespace whole before its init is gone, so waiting for
    // bubblewrap waits for all of it.
    let init = confined
        .then(|| hark_core::platform::children(id).first().copied())
        .flatten();
    let agent_group = init
        .and_then(|init| hark_core::platform::children(init).first().copied())
        .and_then(pid)
        .and_then(|agent| getpgid(Some(agent)).ok());
    // (An agent already gone leaves its init ending: nothing to tell.)
    let told = if init.is_some() { agent_group } else { group };
    if let Some(told) = told {
        let _ = kill_process_group(told, Signal::TERM);
    }
    let status = match tokio::time::timeout(GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            // Killing the init ends the namespace; else the group.
            match (init.and_then(pid), group) {
                (Some(init), _) => {
                    let _ = rustix::process::kill_process(init, Signal::KILL);
                }
                (None, Some(group)) => {
                    let _ = kill_process_group(group, Signal::KILL);
                }
                (None, None) => {}
            }
            child.wait().await
        }
    };
    // ESRCH when nothing of the group is left, which is the usual case.
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::KILL);
    }
    status
}

/// The agent's exit status as a shell reports it (128 + the signal that
/// killed it).
#[cfg(unix)]
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| super::signals::by_signal(status.signal().unwrap_or(0)))
}

/// The agent's exit code (Windows has one for every end).
#[cfg(windows)]
fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or(1)
}

/// What holds the agent and what it starts: on Unix its own process group
/// (set when it is spawned), on Windows the run's job object.
#[cfg(unix)]
#[derive(Debug)]
pub struct Job;

#[cfg(unix)]
impl Job {
    pub fn new(_run: hark_core::model::ids::RunId) -> Result<Job, RunError> {
        Ok(Job)
    }

    async fn hold(&self, _child: &mut Child) -> Result<Tree, RunError> {
        Ok(Tree)
    }
}

#[cfg(unix)]
struct Tree;

/// Unix: the group is ended by [`end_group`].
#[cfg(unix)]
fn tree_end(_tree: &Tree) {}

#[cfg(windows)]
fn tree_end(tree: &Tree<'_>) {
    tree.end();
}

/// The run's job, named by its id and this process's pid
/// ([`hark_core::platform::job_name`]), which the daemon asks about a peer.
#[cfg(windows)]
#[derive(Debug)]
pub struct Job(hark_core::platform::ProcessTree);

#[cfg(windows)]
type Tree<'a> = &'a hark_core::platform::ProcessTree;

#[cfg(windows)]
impl Job {
    pub fn new(run: hark_core::model::ids::RunId) -> Result<Job, RunError> {
        let name = hark_core::platform::job_name(&run.to_string(), std::process::id());
        hark_core::platform::ProcessTree::named(&name)
            .map(Job)
            .map_err(RunError::Job)
    }

    /// Puts the agent, started suspended, in the job and lets it run. One
    /// that cannot be put there is killed: no agent runs outside its job.
    async fn hold(&self, child: &mut Child) -> Result<Tree<'_>, RunError> {
        let held = match (child.raw_handle(), child.id()) {
            (Some(handle), Some(pid)) => self.0.hold(handle, pid),
            _ => Err(std::io::Error::other("the agent is gone already")),
        };
        if let Err(e) = held {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(RunError::Job(e));
        }
        Ok(&self.0)
    }
}

/// Windows: reaps the agent and ends its job (what is left of its tree).
/// Windows has no polite stop for a process without a console of its own:
/// a run being stopped ends the job at once; an agent that closed its
/// output is given [`GRACE`] to exit by itself first, so that its own exit
/// status passes through.
#[cfg(windows)]
async fn end_group(
    child: &mut Child,
    tree: Tree<'_>,
    _confined: bool,
    stopping: bool,
) -> std::io::Result<std::process::ExitStatus> {
    if !stopping && let Ok(status) = tokio::time::timeout(GRACE, child.wait()).await {
        tree.end();
        return status;
    }
    // Ended again, and the agent by its own handle too, should the first
    // end have missed it: a process being created as the job ends (Wine
    // passes over one with no thread running yet) is outside its reach.
    loop {
        tree.end();
        match tokio::time::timeout(GRACE, child.wait()).await {
            Ok(status) => return status,
            Err(_) => {
                tracing::warn!("the agent outlived its job's end; ending it again");
                let _ = child.start_kill();
            }
        }
    }
}

/// Shows one stream-json event: the result on stdout, progress on stderr
/// (raw lines pass through to stdout).
fn show(line: &str, turn: &mut Turn) {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        turn.release();
        println!("{line}");
        return;
    };
    if let Some(session) = event.get("session_id").and_then(Value::as_str) {
        turn.session = Some(session.to_owned());
    }
    match event["type"].as_str() {
        Some("assistant") => {
            for block in event["message"]["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => turn.hold(block["text"].as_str().unwrap_or_default()),
                    Some("tool_use") if block["name"] == ASK_TOOL => {
                        turn.release();
                        for q in block["input"]["questions"].as_array().into_iter().flatten() {
                            eprintln!(
                                "  ? asks the operator: [{}] {}",
                                q["header"].as_str().unwrap_or_default(),
                                q["question"].as_str().unwrap_or_default()
                            );
                        }
                    }
                    Some("tool_use") => {
                        turn.release();
                        eprintln!("  → {}", block["name"].as_str().unwrap_or("a tool"))
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            for block in event["message"]["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && block["is_error"] == true {
                    let text = match &block["content"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    turn.release();
                    eprintln!("  ! {}", text.lines().next().unwrap_or_default());
                }
            }
        }
        Some("result") if event["stop_reason"] == "tool_deferred" => {
            turn.deferred = event["deferred_tool_use"]["id"].as_str().map(str::to_owned);
            turn.release();
            eprintln!("hark: the agent is paused: nobody has answered its question yet");
        }
        Some("result") => {
            match event["result"].as_str() {
                Some(result) => {
                    turn.print_result(result);
                    turn.result = Some(result.to_owned());
                }
                None => turn.release(),
            }
            // The total so far of this process: a run that prints a second
            // result (a background sub-agent notified the agent after its
            // first) repeats it, so the last one stands, not their sum
            // (measured on Claude Code 2.1.332, docs/src/agents/claude-code.md).
            let cost = event["total_cost_usd"].as_f64().unwrap_or(0.0);
            turn.cost_usd = cost;
            let ms = event["duration_ms"].as_u64().unwrap_or(0);
            let outcome = if event["is_error"] == true {
                "failed"
            } else {
                "finished"
            };
            eprintln!(
                "hark: the agent {outcome} in {:.1} s (cost ${cost:.4})",
                ms as f64 / 1000.0
            );
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_result_event_repeats_the_total_and_is_not_added() {
        let mut turn = Turn::default();
        for index in [0, 1] {
            let result = serde_json::json!({"type": "result", "result_index": index,
                "result": "done", "total_cost_usd": 0.25, "duration_ms": 10});
            show(&result.to_string(), &mut turn);
        }
        assert_eq!(turn.cost_usd, 0.25);
        assert_eq!(turn.result.as_deref(), Some("done"));
    }
}
