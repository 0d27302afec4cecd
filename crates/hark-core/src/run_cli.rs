//! `hark run`: dispatches an agent (`claude -p` by default) with the bridge
//! attached when an operator is, shows its progress from
//! `--output-format stream-json`, and exits with its exit status.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::bridge::MAX_TIMEOUT;
use crate::client::{self, Call};
use crate::config::Config;
use crate::dispatch::{self, Attached, UserCommand, Verb};
use crate::dispatcher::{DispatchRequest, Environment, RUN_ID_ENV};
use crate::intake::{Given, Intake, When};
use crate::item::{Asker, Outcome};
use crate::relay::{Relay, RunDir};
use crate::socket;
use crate::store::RunStart;
use crate::wire::{Caller, ClientFrame, ServerFrame};

pub const EXIT_FAILED: i32 = 1;
/// The intake was not answered, so the agent did not start.
pub const EXIT_NOT_ANSWERED: i32 = 3;

/// Why the agent did not start.
enum Stop {
    Failed(String),
    /// The intake went unanswered; `missing` are its unanswered ids.
    NotAnswered {
        reason: String,
        missing: Vec<String>,
    },
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop::Failed(message)
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub verb: Verb,
    pub cwd: Option<PathBuf>,
    /// The session the run's questions are filed under.
    pub session: Option<String>,
    /// The bounded wait for each question of the run.
    pub timeout: Option<Duration>,
    /// The agent command (default: the config's, else `claude` on PATH).
    pub agent: Option<PathBuf>,
    /// `words` is the user's own agent command line, not a prompt.
    pub wrap: bool,
    /// Gate every write through the operator (`--permission-prompt-tool
    /// mcp__operator__approve`); denied when nobody is attached.
    pub read_only: bool,
    /// Authored questions asked before the agent starts (`--intake FILE`).
    pub intake: Option<PathBuf>,
    /// Intake answers given on the command line (`--answer ID=VALUE`).
    pub answers: Vec<String>,
    /// Hand the run to the operator's daemon (the app) instead of running
    /// it here: it outlives this terminal, and its output goes to a log.
    pub detach: bool,
    pub words: Vec<String>,
}

/// What one turn of the agent reported.
#[derive(Debug, Default)]
struct Turn {
    /// The agent's own session id, to resume.
    session: Option<String>,
    status: i32,
    /// Its final result text and cost, from the `result` event.
    result: Option<String>,
    cost_usd: f64,
}

/// Runs `hark run`; returns the exit code.
pub async fn run(options: RunOptions) -> i32 {
    if options.detach {
        return detach(options).await;
    }
    match dispatch(options).await {
        Ok(code) => code,
        Err(Stop::Failed(message)) => {
            eprintln!("hark: {message}");
            EXIT_FAILED
        }
        Err(Stop::NotAnswered { reason, missing }) => {
            println!(
                "{}",
                serde_json::json!({"outcome": "not_answered", "reason": reason, "missing": missing})
            );
            eprintln!("hark: the intake was not answered ({reason}), so the agent did not start");
            let example: Vec<String> = missing
                .iter()
                .map(|id| format!("--answer {id}=VALUE"))
                .collect();
            eprintln!(
                "hint: start the app or `hark serve`, or give the answers: {}",
                example.join(" ")
            );
            EXIT_NOT_ANSWERED
        }
    }
}

/// `hark run --detach`: the operator's daemon starts the run and owns it.
/// Prints the run id; `hark runs` follows it.
async fn detach(options: RunOptions) -> i32 {
    let request = match detached_request(options) {
        Ok(request) => request,
        Err(message) => {
            eprintln!("hark: {message}");
            return EXIT_FAILED;
        }
    };
    match crate::inbox_cli::query(&ClientFrame::Dispatch { request }).await {
        Ok(ServerFrame::Dispatched(run)) => {
            println!("{}", run.run_id);
            eprintln!(
                "hark: run {} started by the operator's daemon; its output goes to {}\nhint: `hark runs` shows how it goes",
                &run.run_id[..8],
                run.log.display()
            );
            0
        }
        Ok(other) => crate::inbox_cli::refused(other),
        Err(code) => code,
    }
}

/// The daemon's request for these options. Paths are made absolute: the
/// daemon runs elsewhere. The run's directory is this one unless named.
fn detached_request(options: RunOptions) -> Result<DispatchRequest, String> {
    if options.wrap {
        return Err(
            "--detach hands a prompt to the daemon; it cannot --wrap a command line".into(),
        );
    }
    if !options.answers.is_empty() {
        return Err("--detach asks the intake through the operator; drop --answer".into());
    }
    if options.words.is_empty() {
        return Err("say what to do: hark run --detach -- PROMPT…".into());
    }
    let here = std::env::current_dir().map_err(|e| format!("cannot read this directory: {e}"))?;
    let absolute = |path: PathBuf| {
        if path.is_absolute() {
            path
        } else {
            here.join(path)
        }
    };
    let intake = match &options.intake {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the intake {}: {e}", path.display()))?;
            Some(
                serde_json::from_str(&text)
                    .map_err(|e| format!("the intake {} is not JSON: {e}", path.display()))?,
            )
        }
        None => None,
    };
    // A bare command name is found on the PATH sent along; a path is made absolute.
    let agent = options.agent.map(|agent| {
        if agent.components().count() > 1 {
            absolute(agent)
        } else {
            agent
        }
    });
    Ok(DispatchRequest {
        prompt: options.words.join(" "),
        verb: options.verb,
        cwd: Some(absolute(options.cwd.unwrap_or_else(|| here.clone()))),
        session: options.session,
        timeout_secs: options.timeout.map(|t| t.as_secs_f64()),
        read_only: options.read_only,
        intake,
        agent,
        // The run gets this shell's environment (its PATH, its API keys),
        // not the daemon's; a variable that is not UTF-8 cannot be sent.
        env: Some(Environment(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        )),
    })
}

/// Asks the operator through the run's socket, waiting as long as hark
/// waits at most: the run does not go on without them.
async fn ask_operator(socket: &Path, asker: &str, request: Value) -> Result<Outcome, String> {
    let frame = ClientFrame::Ask {
        caller: Caller {
            asker: Asker::this_process(asker),
            timeout_secs: Some(MAX_TIMEOUT.as_secs_f64()),
            ..Caller::default()
        },
        request,
    };
    match Call::start(socket, &frame).await {
        Ok(mut call) => call.outcome().await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// A conversation the daemon owns has no terminal: the operator's next
/// message is asked for in the app, after what the agent said.
const NEXT_MESSAGE: &str = "Your next message to the agent?";
const END_CONVERSATION: &str = "End the conversation";
const CARRY_ON: &str = "Carry on";

/// The question asking for the next message (the default ends it).
fn next_message_request(said: Option<&str>) -> Value {
    let said = said
        .map(|text| {
            let text: String = text.chars().take(600).collect();
            format!("The agent said: {text}\n\n")
        })
        .unwrap_or_default();
    serde_json::json!({"questions": [{
        "question": format!("{said}{NEXT_MESSAGE}"),
        "header": "Converse",
        "multiSelect": false,
        "options": [
            {"label": END_CONVERSATION, "description": "Stop here; the run finishes."},
            {"label": CARRY_ON, "description": "Let the agent go on by its own judgement."}
        ],
        "default": END_CONVERSATION
    }]})
}

/// The operator's next message, or `None` to end the conversation (they
/// ended it, took the default, skipped, or nobody answered).
async fn next_message_from_operator(socket: Option<&Path>, said: Option<&str>) -> Option<String> {
    let request = next_message_request(said);
    let outcome = ask_operator(socket?, "hark run (converse)", request).await;
    let Ok(Outcome::Answered(resolution)) = outcome else {
        return None;
    };
    let (question, answer) = resolution.answers.iter().next()?;
    if resolution.defaulted.contains(question) {
        return None;
    }
    match answer {
        crate::schema::AnswerValue::One(text) if text == END_CONVERSATION => None,
        crate::schema::AnswerValue::One(text) if text == CARRY_ON => Some("Go on.".into()),
        crate::schema::AnswerValue::One(text) if !text.trim().is_empty() => {
            Some(text.trim().into())
        }
        _ => None,
    }
}

/// The operator's next message on the terminal, or `None` at the end of input.
async fn next_message_from_terminal() -> Option<String> {
    eprint!("you> ");
    let mut line = String::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    match stdin.read_line(&mut line).await {
        Ok(0) | Err(_) => None,
        Ok(_) if line.trim().is_empty() => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks the intake questions not answered on the command line, through the
/// run's socket (`None`: nobody is attached). No timeout beyond hark's
/// longest wait: intake questions wait for the operator.
async fn ask_intake(intake: &Intake, given: &Given, socket: Option<&Path>) -> Result<Given, Stop> {
    let mut given = given.clone();
    for request in intake.requests(&given) {
        let missing = || {
            intake
                .questions
                .iter()
                .filter(|q| !given.contains_key(&q.id))
                .map(|q| q.id.clone())
                .collect::<Vec<_>>()
        };
        let Some(socket) = socket else {
            return Err(Stop::NotAnswered {
                reason: "no operator is attached".into(),
                missing: missing(),
            });
        };
        let request = serde_json::to_value(&request).map_err(|e| e.to_string())?;
        match ask_operator(socket, "hark run (intake)", request).await {
            Ok(Outcome::Answered(resolution)) => {
                intake.take_answers(&resolution.answers, &mut given)
            }
            Ok(other) => {
                return Err(Stop::NotAnswered {
                    reason: other.name().replace('_', " "),
                    missing: missing(),
                });
            }
            Err(e) => {
                return Err(Stop::NotAnswered {
                    reason: e,
                    missing: missing(),
                });
            }
        }
    }
    Ok(given)
}

async fn dispatch(options: RunOptions) -> Result<i32, Stop> {
    let config = Config::load().map_err(|e| e.to_string())?;
    let intake = match &options.intake {
        Some(_) if options.wrap => {
            return Err(
                "--intake puts its answers into the prompt, so it needs a prompt, not --wrap"
                    .to_owned()
                    .into(),
            );
        }
        Some(path) => Some(Intake::load(path)?),
        None if !options.answers.is_empty() => {
            return Err(
                "--answer gives intake answers; name the intake with --intake FILE"
                    .to_owned()
                    .into(),
            );
        }
        None => None,
    };
    let given = match &intake {
        Some(intake) => intake.given(&options.answers)?,
        None => Given::new(),
    };
    if options.words.is_empty() {
        return Err(Stop::Failed(if options.wrap {
            "--wrap needs the agent command after --, e.g. hark run --wrap -- claude -p \"…\""
                .into()
        } else {
            "say what to do: hark run -- PROMPT…".into()
        }));
    }
    let app_socket = socket::app_socket_path().map_err(|e| e.to_string())?;
    let attached = tokio::net::UnixStream::connect(&app_socket).await.is_ok();
    // A run the daemon dispatched comes with its id (the daemon already told
    // its caller), and has no terminal: a conversation asks in the app.
    let dispatched_id = std::env::var(RUN_ID_ENV)
        .ok()
        .filter(|id| uuid::Uuid::parse_str(id).is_ok());
    let dispatched = dispatched_id.is_some();
    let run_id = dispatched_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let session = options
        .session
        .clone()
        .unwrap_or_else(|| format!("run-{}", &run_id[..8]));
    let timeout = options.timeout.unwrap_or_else(|| config.ask_timeout());
    let user_configs = if options.wrap {
        UserCommand::parse(&options.words)?.mcp_configs
    } else {
        Vec::new()
    };
    let servers = existing_servers(&user_configs)?;
    let hark = std::env::current_exe().map_err(|e| format!("cannot find this hark's path: {e}"))?;
    let config_json = dispatch::mcp_config(&hark, servers, options.read_only).to_string();
    let write_config = |dir: &RunDir| {
        dir.write_private("mcp.json", config_json.as_bytes())
            .map_err(|e| format!("cannot write the MCP config: {e}"))
    };
    // Kept alive for the whole run; dropping it removes socket and config.
    let bridge = if attached {
        let relay = Relay::start(app_socket.clone(), run_id.clone(), session.clone())
            .map_err(|e| e.to_string())?;
        let mcp_config = write_config(&relay.dir)?;
        let attach = Attached {
            socket: relay.socket.clone(),
            mcp_config,
            session_id: session.clone(),
            ask_timeout: timeout,
        };
        Some((relay, attach))
    } else {
        None
    };
    // A read-only run with nobody attached still gets `approve`, to be told why each write is denied.
    let headless_gate = match (&bridge, options.read_only) {
        (None, true) => {
            let dir = RunDir::create().map_err(|e| e.to_string())?;
            let config = write_config(&dir)?;
            Some((dir, config))
        }
        _ => None,
    };
    let read_only = match (&bridge, &headless_gate) {
        _ if !options.read_only => None,
        (Some((_, attach)), _) => Some(attach.mcp_config.clone()),
        (None, Some((_, config))) => Some(config.clone()),
        (None, None) => None,
    };
    let attach = bridge.as_ref().map(|(_, a)| a);
    eprintln!(
        "hark: run {} ({}), {}",
        &run_id[..8],
        session,
        match (attach.is_some(), options.read_only) {
            (true, false) => "the operator is attached: the agent can ask",
            (true, true) => "read-only: the operator is attached to approve writes",
            (false, false) => "no operator attached: the agent proceeds on its own",
            (false, true) => "read-only with no operator attached: every write is denied",
        }
    );
    let agent = options
        .agent
        .clone()
        .or_else(|| config.agent_command.clone())
        .unwrap_or_else(|| PathBuf::from("claude"));
    let mut resume: Option<String> = None;
    let mut prompt = options.words.join(" ");
    let run_socket = bridge.as_ref().map(|(relay, _)| relay.socket.clone());
    let mut first_turn = true;
    // Recorded in the operator's store, so the app and `hark runs` show it.
    let record = |frame: ClientFrame| {
        let socket = app_socket.clone();
        async move {
            if let Err(e) = client::request(&socket, &frame).await {
                tracing::debug!("the run was not recorded: {e}");
            }
        }
    };
    if attach.is_some() {
        let command = if options.wrap {
            options.words.join(" ")
        } else {
            format!("{} -p {}", agent.display(), options.words.join(" "))
        };
        let cwd = options.cwd.clone().or_else(|| std::env::current_dir().ok());
        let run = RunStart {
            id: run_id.clone(),
            session_id: session.clone(),
            command,
            cwd: cwd.map(|d| d.display().to_string()),
            pid: std::process::id(),
        };
        record(ClientFrame::RunStarted { run }).await;
    }
    // What the run's record keeps of its output: the last result, the cost of every turn.
    let (mut last_result, mut cost_usd) = (None::<String>, 0.0);
    let result = loop {
        if let Some(intake) = &intake
            && (first_turn || intake.when == When::EveryTurn)
        {
            let answered = match ask_intake(intake, &given, run_socket.as_deref()).await {
                Ok(answered) => answered,
                Err(stop) => break Err(stop),
            };
            prompt = format!("{}\n{prompt}", intake.block(&answered));
        }
        first_turn = false;
        let user = if options.wrap {
            match UserCommand::parse(&options.words) {
                Ok(user) => user,
                Err(e) => break Err(e.into()),
            }
        } else {
            dispatch::base_command(&agent, &prompt, resume.as_deref())
        };
        let composed = dispatch::compose(user, options.verb, attach, read_only.as_deref());
        let turn = match run_agent(composed, options.cwd.as_ref()).await {
            Ok(turn) => turn,
            Err(e) => break Err(e.into()),
        };
        cost_usd += turn.cost_usd;
        if turn.result.is_some() {
            last_result.clone_from(&turn.result);
        }
        if options.verb != Verb::Converse || options.wrap {
            break Ok(turn.status);
        }
        let Some(session) = turn.session else {
            eprintln!("hark: the agent reported no session id; the conversation cannot go on");
            break Ok(turn.status);
        };
        resume = Some(session);
        let next = if dispatched {
            next_message_from_operator(run_socket.as_deref(), turn.result.as_deref()).await
        } else {
            next_message_from_terminal().await
        };
        match next {
            Some(message) => prompt = message,
            None => break Ok(turn.status),
        }
    };
    if attach.is_some() {
        let exit_code = match &result {
            Ok(status) => *status,
            Err(Stop::NotAnswered { .. }) => EXIT_NOT_ANSWERED,
            Err(Stop::Failed(_)) => EXIT_FAILED,
        };
        record(ClientFrame::RunFinished {
            run_id: run_id.clone(),
            exit_code,
            result: last_result,
            cost_usd: Some(cost_usd),
        })
        .await;
    }
    result
}

/// The servers in the user's own `--mcp-config` values (files or JSON).
fn existing_servers(
    configs: &[String],
) -> Result<std::collections::BTreeMap<String, Value>, String> {
    let mut servers = std::collections::BTreeMap::new();
    for config in configs {
        let text = if config.trim_start().starts_with('{') {
            config.clone()
        } else {
            std::fs::read_to_string(config)
                .map_err(|e| format!("cannot read --mcp-config {config}: {e}"))?
        };
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--mcp-config {config} is not JSON: {e}"))?;
        if let Some(map) = value.get("mcpServers").and_then(Value::as_object) {
            servers.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    Ok(servers)
}

/// Starts the agent, shows its stream, and waits for it.
async fn run_agent(composed: dispatch::Composed, cwd: Option<&PathBuf>) -> Result<Turn, String> {
    let mut command = Command::new(&composed.program);
    command
        .args(&composed.args)
        .envs(&composed.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env_remove(RUN_ID_ENV)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|e| {
        format!(
            "cannot start the agent {:?}: {e}\nhint: install Claude Code, or name the agent with --agent PATH",
            composed.program
        )
    })?;
    let stdout = child.stdout.take().ok_or("the agent has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut turn = Turn::default();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => show(&line, &mut turn),
                Ok(None) | Err(_) => break,
            },
            _ = tokio::signal::ctrl_c() => {
                eprintln!("hark: interrupted; stopping the agent");
                let _ = child.start_kill();
                break;
            }
        }
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    turn.status = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    Ok(turn)
}

/// Prints one stream-json event as progress (raw lines pass through).
fn show(line: &str, turn: &mut Turn) {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
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
                    Some("text") => println!("{}", block["text"].as_str().unwrap_or_default()),
                    Some("tool_use") if block["name"] == dispatch::ASK_TOOL => {
                        for q in block["input"]["questions"].as_array().into_iter().flatten() {
                            eprintln!(
                                "  ? asks the operator: [{}] {}",
                                q["header"].as_str().unwrap_or_default(),
                                q["question"].as_str().unwrap_or_default()
                            );
                        }
                    }
                    Some("tool_use") => {
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
                    eprintln!("  ! {}", text.lines().next().unwrap_or_default());
                }
            }
        }
        Some("result") => {
            if let Some(result) = event["result"].as_str() {
                println!("{result}");
                turn.result = Some(result.to_owned());
            }
            let cost = event["total_cost_usd"].as_f64().unwrap_or(0.0);
            turn.cost_usd += cost;
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
