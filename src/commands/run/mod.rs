//! `hark run`: dispatches an agent (`claude -p` by default) with the bridge
//! attached when an operator is, shows its progress from
//! `--output-format stream-json`, and exits with its exit status.
//!
//! - this module: the run from start to end — what it needs before the
//!   first turn ([`Setup`]), the turn loop, its record in the store;
//! - [`agent`]: one turn of the agent process and its stream ([`codex`]:
//!   Codex's events);
//! - [`operator`]: what the run asks the operator itself (the intake, a
//!   conversation's next message);
//! - [`detach`]: `--detach`, handing the run to the daemon;
//! - [`error`]: why a run could not start or go on, and what to do about it;
//! - [`paused`]: a parked call's wait, the file that lets the run be
//!   resumed by another process, and `hark resume`.

mod agent;
mod codex;
mod detach;
mod error;
mod operator;
mod paused;
mod signals;

pub use error::RunError;
pub use paused::resume;

use std::path::PathBuf;

use hark_core::agent::{AgentKind, Attached, ReadOnly, UserCommand, Verb};
use hark_core::bridge::client;
use hark_core::bridge::relay::{Relay, RunDir};
use hark_core::bridge::socket;
use hark_core::bridge::wire::ClientFrame;
use hark_core::config::{Config, OnTimeout};
use hark_core::confine::{self, Confinement};
use hark_core::daemon::listener::MAX_TIMEOUT;
use hark_core::gate::intake::{Given, Intake, When};
use hark_core::model::ids::{Ids, RunId, SessionId};
use hark_core::model::run::RunStart;

use signals::unless_stopped;
pub use signals::{Received, StopSignals};

use crate::cli::{OnTimeoutArg, RunArgs};
use crate::exit::ExitStatus;

/// Why the agent did not start, or the run stopped.
enum Stop {
    Failed(RunError),
    /// The intake went unanswered; `missing` are its unanswered ids.
    NotAnswered {
        reason: String,
        missing: Vec<String>,
    },
    /// A stop signal came while the agent was paused on a parked question:
    /// the run stays parked (`kept`: another process can resume it).
    Paused {
        received: Received,
        kept: bool,
    },
}

impl<E: Into<RunError>> From<E> for Stop {
    fn from(e: E) -> Stop {
        Stop::Failed(e.into())
    }
}

/// Runs `hark run`.
pub async fn run(args: RunArgs) -> ExitStatus {
    if args.detach {
        return detach::run(args).await;
    }
    finish(run_to_end(args, None).await)
}

/// Says how the run ended, and with what status.
fn finish(ended: Result<i32, Stop>) -> ExitStatus {
    match ended {
        Ok(code) => ExitStatus::Agent(code),
        Err(Stop::Paused { received, kept }) => {
            if kept {
                eprintln!(
                    "hark: stopped by {} while parked; the question stays with the operator, and answering it resumes the run in the background (or here: `hark resume RUN_ID`)",
                    received.name
                );
            } else {
                eprintln!(
                    "hark: stopped by {} while parked; the run cannot be resumed without this process",
                    received.name
                );
            }
            ExitStatus::Agent(128 + received.number)
        }
        Err(Stop::Failed(e)) => {
            eprintln!("hark: {e}");
            if let Some(hint) = e.hint() {
                eprintln!("hint: {hint}");
            }
            ExitStatus::Failure
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
            ExitStatus::NotAnswered
        }
    }
}

/// The intake of `--intake FILE`, and the answers `--answer` gave.
fn intake_of(args: &RunArgs) -> Result<Option<(Intake, Given)>, RunError> {
    let Some(path) = &args.intake else {
        if !args.answers.is_empty() {
            return Err(RunError::Usage(
                "--answer gives intake answers; name the intake with --intake FILE",
            ));
        }
        return Ok(None);
    };
    if args.wrap {
        return Err(RunError::Usage(
            "--intake puts its answers into the prompt, so it needs a prompt, not --wrap",
        ));
    }
    let intake = Intake::load(path)?;
    let given = given(&intake, &args.answers)?;
    Ok(Some((intake, given)))
}

/// `--answer ID=VALUE` words as the intake's answers.
fn given(intake: &Intake, words: &[String]) -> Result<Given, RunError> {
    let pairs = words
        .iter()
        .map(|word| {
            word.split_once('=')
                .ok_or_else(|| RunError::GivenShape(word.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    intake.given(pairs).map_err(RunError::Given)
}

/// Everything a run needs before its first turn. Dropping it removes the
/// run's socket and config files.
struct Setup {
    run_id: RunId,
    session: SessionId,
    /// The daemon dispatched this run: it has no terminal, so a
    /// conversation asks in the app.
    dispatched: bool,
    app_socket: PathBuf,
    /// The relay to the operator and what the agent is given of it, when
    /// one is attached.
    bridge: Option<(Relay, Attached)>,
    /// A read-only run with nobody attached still gets `approve`, to be
    /// told why each write is denied.
    headless_gate: Option<(RunDir, PathBuf)>,
    /// The agent command.
    agent: PathBuf,
    /// Which CLI it is.
    kind: AgentKind,
    /// With `--wrap`, the user's own command line, read once.
    wrapped: Option<UserCommand>,
    /// Where the agent works, absolute: a read-only run's sandbox names it.
    cwd: PathBuf,
    /// Where the agent runs: out of the operator's reach, unless it cannot
    /// be or was not wanted.
    confine: confine::Plan,
}

impl Setup {
    /// `resumed` names a paused run this one takes over.
    async fn new(
        args: &RunArgs,
        config: &Config,
        resumed: Option<RunId>,
    ) -> Result<Setup, RunError> {
        let app_socket = socket::app_socket_path()?;
        let attached = hark_core::platform::connect(&app_socket).await.is_ok();
        // A run the daemon dispatched comes with its id (the daemon already
        // told its caller).
        let dispatched_id = std::env::var(hark_core::env::RUN_ID)
            .ok()
            .and_then(|id| id.parse::<RunId>().ok());
        // A resumed run with no terminal (the daemon's) converses in the app.
        let dispatched = dispatched_id.is_some() || (resumed.is_some() && !paused::has_terminal());
        let run_id = resumed
            .or(dispatched_id)
            .unwrap_or_else(|| Ids::random().run());
        let session = SessionId::from(
            args.session
                .clone()
                .unwrap_or_else(|| format!("run-{}", run_id.short())),
        );
        // The kind named, else the one the command's name says; the
        // command named, else the kind's own (`claude`, `codex`) on PATH.
        let named_kind = args.agent_kind.or(config.agent_kind);
        // A kind asked for here takes the config's command only if it is
        // that kind's (the New run form's Codex, over a configured claude).
        let configured = config.agent_command.clone().filter(|command| {
            args.agent_kind.is_none_or(|kind| {
                config
                    .agent_kind
                    .unwrap_or_else(|| AgentKind::of_program(command))
                    == kind
            })
        });
        let agent = args
            .agent
            .clone()
            .or(configured)
            .unwrap_or_else(|| PathBuf::from(named_kind.unwrap_or_default().name()));
        let kind = named_kind.unwrap_or_else(|| match args.words.first().filter(|_| args.wrap) {
            Some(program) => AgentKind::of_program(program.as_ref()),
            None => AgentKind::of_program(&agent),
        });
        // A read-only run turns on Claude Code's Bash sandbox, which would
        // refuse to start without its programs: say so before starting it
        // (Codex's read-only sandbox is its own).
        if args.read_only && kind == AgentKind::Claude {
            let missing = hark_core::agent::sandbox::missing();
            if !missing.is_empty() {
                return Err(RunError::NoSandbox { missing });
            }
        }
        let mut wrapped = match (args.wrap, kind) {
            (false, _) => None,
            (true, AgentKind::Claude) => Some(UserCommand::parse(&args.words)?),
            (true, AgentKind::Codex) => {
                let user = UserCommand::verbatim(&args.words)?;
                hark_core::agent::codex::check_wrapped(&user)?;
                Some(user)
            }
        };
        // hark merges its own settings (a read-only run's sandbox, the park
        // hook) into the user's, which it reads once.
        if let Some(settings) = wrapped.as_mut().and_then(|w| w.settings.as_mut()) {
            *settings = agent::existing_settings(settings)?;
        }
        let user_configs = wrapped.as_ref().map_or(&[][..], |u| &u.mcp_configs[..]);
        let servers = agent::existing_servers(user_configs)?;
        let hark = std::env::current_exe().map_err(RunError::ThisHark)?;
        let config_json = hark_core::agent::mcp_config(&hark, servers, args.read_only).to_string();
        let write_config = |dir: &RunDir| {
            dir.write_private("mcp.json", config_json.as_bytes())
                .map_err(RunError::WriteConfig)
        };
        let bridge = if attached {
            let relay = Relay::start(app_socket.clone(), run_id, session.clone())?;
            let mcp_config = write_config(&relay.dir)?;
            let attach = Attached {
                hark: hark.clone(),
                socket: relay.socket.clone(),
                mcp_config,
                session_id: session.clone(),
                // Only a wait given here is sent: without one the
                // daemon's own applies, which can be as long as it allows.
                ask_timeout: args.timeout,
                longest_wait: args.timeout.unwrap_or(MAX_TIMEOUT),
                park_hook: (parks(args, config)
                    && kind_parks(kind, args)
                    && wrap_parks(wrapped.as_ref()))
                .then(|| hark_core::agent::hooks::hook_command(&hark)),
            };
            Some((relay, attach))
        } else {
            None
        };
        // Codex's writes are held by its own sandbox, with no `approve`.
        let headless_gate = if bridge.is_none() && args.read_only && kind == AgentKind::Claude {
            let dir = RunDir::create()?;
            let config = write_config(&dir)?;
            Some((dir, config))
        } else {
            None
        };
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(RunError::Cwd)?,
        };
        let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
        let run_dirs: Vec<&std::path::Path> = bridge
            .iter()
            .map(|(relay, _)| relay.dir.path())
            .chain(headless_gate.iter().map(|(dir, _)| dir.path()))
            .collect();
        // The agent's own program too, should it live in a temp directory.
        let mut operator = confine::Session::current();
        let program = match (&wrapped, args.words.first()) {
            (Some(_), Some(first)) => PathBuf::from(first),
            _ => agent.clone(),
        };
        operator.programs.extend(
            hark_core::platform::find_program(&program)
                .and_then(|p| p.parent().map(std::path::Path::to_path_buf)),
        );
        let confine = confine::plan(
            &operator,
            &cwd,
            &run_dirs,
            &config.confine,
            !args.no_confine,
        );
        Ok(Setup {
            run_id,
            session,
            dispatched,
            app_socket,
            bridge,
            headless_gate,
            agent,
            kind,
            wrapped,
            cwd,
            confine,
        })
    }

    fn attach(&self) -> Option<&Attached> {
        self.bridge.as_ref().map(|(_, attach)| attach)
    }

    /// The MCP config carrying `approve` and the directory the agent works
    /// in, for a read-only run.
    fn read_only(&self, args: &RunArgs) -> Option<ReadOnly> {
        if !args.read_only {
            return None;
        }
        let mcp_config = match (&self.bridge, &self.headless_gate) {
            (Some((_, attach)), _) => attach.mcp_config.clone(),
            (None, Some((_, config))) => config.clone(),
            // Codex's sandbox needs no MCP config.
            (None, None) => PathBuf::new(),
        };
        Some(ReadOnly {
            mcp_config,
            cwd: self.cwd.clone(),
            nested_as_root: self.confine.confinement.is_confined()
                && cfg!(target_os = "linux")
                && hark_core::platform::is_root(),
        })
    }

    /// The run's own socket, through which it asks the operator.
    fn run_socket(&self) -> Option<PathBuf> {
        self.bridge.as_ref().map(|(relay, _)| relay.socket.clone())
    }

    /// Says on stderr what this run is and who can answer it.
    fn announce(&self, args: &RunArgs) {
        let codex = self.kind == AgentKind::Codex;
        eprintln!(
            "hark: run {} ({}), {}",
            self.run_id.short(),
            self.session,
            match (self.bridge.is_some(), args.read_only) {
                (true, false) => "the operator is attached: the agent can ask",
                (true, true) if codex => {
                    "read-only in Codex's sandbox, which refuses every write; the operator is attached: the agent can ask"
                }
                (true, true) => "read-only: the operator is attached to approve writes",
                (false, false) => "no operator attached: the agent proceeds on its own",
                (false, true) if codex => {
                    "read-only in Codex's sandbox with no operator attached: every write is refused"
                }
                (false, true) => "read-only with no operator attached: every write is denied",
            }
        );
        match &self.confine.confinement {
            Confinement::Confined { by } => eprintln!(
                "hark: confined by {by}: hark's socket, store and config do not exist for the agent"
            ),
            Confinement::Unavailable { reason } => eprintln!(
                "hark: NOT CONFINED: {reason}; the agent can reach hark's socket, store and config (hint: `hark doctor`)"
            ),
            Confinement::Off => eprintln!(
                "hark: not confined (turned off): the agent can reach hark's socket, store and config"
            ),
        }
    }

    /// Records a run frame in the operator's store, so the app and `hark
    /// runs` show it (only when an operator is attached).
    async fn record(&self, frame: ClientFrame) {
        if self.bridge.is_none() {
            return;
        }
        if let Err(e) = client::request(&self.app_socket, &frame).await {
            tracing::debug!("the run was not recorded: {e}");
        }
    }

    /// The run as `hark run` announces it to the store.
    fn start_record(&self, args: &RunArgs) -> RunStart {
        let command = match (args.wrap, self.kind) {
            (true, _) => args.words.join(" "),
            (false, AgentKind::Claude) => {
                format!("{} -p {}", self.agent.display(), args.words.join(" "))
            }
            (false, AgentKind::Codex) => {
                format!("{} exec {}", self.agent.display(), args.words.join(" "))
            }
        };
        let cwd = args.cwd.clone().or_else(|| std::env::current_dir().ok());
        RunStart {
            id: self.run_id,
            session_id: self.session.clone(),
            command,
            cwd: cwd.map(|d| d.display().to_string()),
            pid: std::process::id(),
            confinement: Some(self.confine.confinement.clone()),
        }
    }
}

/// Whether a `--wrap` run's command line can park (a run of hark's own
/// command line can); says why not.
fn wrap_parks(wrapped: Option<&UserCommand>) -> bool {
    match wrapped.map(UserCommand::parkable) {
        None | Some(Ok(())) => true,
        Some(Err(why)) => {
            eprintln!(
                "hark: this command line cannot be paused and resumed ({why}); a question nobody answers in time times out instead of parking"
            );
            false
        }
    }
}

/// Whether an agent of this kind can park; says why not.
fn kind_parks(kind: AgentKind, args: &RunArgs) -> bool {
    if kind == AgentKind::Claude {
        return true;
    }
    let wait = match args.timeout {
        Some(timeout) => format!("{} s", timeout.as_secs_f64()),
        None => "the operator's bounded wait".to_owned(),
    };
    eprintln!(
        "hark: Codex has no hook that pauses a call, so a question nobody answers within {wait} times out and the agent proceeds on its own"
    );
    false
}

/// Whether a question nobody answers in time parks the agent (the flag,
/// else the config).
fn parks(args: &RunArgs, config: &Config) -> bool {
    match args.on_timeout {
        Some(OnTimeoutArg::Park) => true,
        Some(OnTimeoutArg::Proceed) => false,
        None => config.on_timeout == OnTimeout::Park,
    }
}

/// What the run's record keeps of its output: the last result, the cost
/// of every turn.
#[derive(Debug, Default)]
struct Kept {
    last_result: Option<String>,
    cost_usd: f64,
}

async fn run_to_end(args: RunArgs, resuming: Option<paused::Resuming>) -> Result<i32, Stop> {
    // Taken before anything starts, so no agent outlives a stop signal.
    let stop = StopSignals::listen();
    // The directories of runs that died by SIGKILL (which no process can
    // catch) go now.
    RunDir::sweep();
    let config = Config::load()?;
    // A resumed run's intake was answered before it paused.
    let intake = match resuming {
        Some(_) => None,
        None => intake_of(&args)?,
    };
    if args.words.is_empty() {
        return Err(Stop::Failed(RunError::Usage(if args.wrap {
            "--wrap needs the agent command after --, e.g. hark run --wrap -- claude -p \"…\""
        } else {
            "say what to do: hark run -- PROMPT…"
        })));
    }
    let setup = Setup::new(&args, &config, resuming.as_ref().map(|r| r.run_id)).await?;
    setup.announce(&args);
    // A resumed run reports itself again: its record then names this
    // process, which the daemon watches as the run's.
    setup
        .record(ClientFrame::RunStarted {
            run: setup.start_record(&args),
        })
        .await;
    let mut kept = Kept::default();
    let result = turns(&args, &setup, intake.as_ref(), &mut kept, stop, resuming).await;
    let exit_code = match &result {
        Ok(status) => *status,
        Err(Stop::NotAnswered { .. }) => ExitStatus::NotAnswered.code(),
        Err(Stop::Failed(_)) => ExitStatus::Failure.code(),
        // Still parked: the run has not ended.
        Err(Stop::Paused { .. }) => return result,
    };
    setup
        .record(ClientFrame::RunFinished {
            run_id: setup.run_id,
            exit_code,
            result: kept.last_result,
            // Codex reports tokens, not a cost.
            cost_usd: (setup.kind == AgentKind::Claude).then_some(kept.cost_usd),
        })
        .await;
    result
}

/// The agent's turns: one for a task, turn after turn for a conversation
/// (each resuming the agent's session) until the operator ends it.
async fn turns(
    args: &RunArgs,
    setup: &Setup,
    intake: Option<&(Intake, Given)>,
    kept: &mut Kept,
    mut stop: StopSignals,
    resuming: Option<paused::Resuming>,
) -> Result<i32, Stop> {
    let stopped = |received: Received| {
        eprintln!("hark: stopped by {}; the run ends", received.name);
        Ok(128 + received.number)
    };
    let run_socket = setup.run_socket();
    let read_only = setup.read_only(args);
    let mut prompt = args.words.join(" ");
    let mut resume: Option<String> = None;
    let mut first_turn = resuming.is_none();
    // What another process needs to resume this run, should it park.
    // A resumed run's agent gets the environment the run started with.
    let resumed_env = resuming.as_ref().map(|r| r.origin.env.clone());
    let (mut parked, origin) = match resuming {
        Some(resuming) => (Some(resuming.parked), resuming.origin),
        None => (None, paused::Origin::this_process()),
    };
    // The paused-run file of the call the current turn resumes: it goes
    // when the turn ends.
    let mut resumed_file = None;
    // Set when the agent paused on a question: the next turn resumes it,
    // with no prompt, and no intake.
    let mut paused = false;
    loop {
        if let Some(mut call) = parked.take() {
            match call.wait(setup, &mut stop).await? {
                paused::Waited::Cancelled(reason) => {
                    eprintln!("hark: {reason}; the agent stays stopped and the run ends");
                    return Ok(ExitStatus::NotAnswered.code());
                }
                paused::Waited::Resume => {}
            }
            resume = Some(call.agent_session);
            resumed_file = call.held;
            paused = true;
        }
        if let Some((intake, given)) = intake
            && !paused
            && (first_turn || intake.when == When::EveryTurn)
        {
            let asked = operator::ask_intake(intake, given, run_socket.as_deref());
            let answered = match unless_stopped(&mut stop, asked).await {
                Ok(answered) => answered?,
                Err(received) => return stopped(received),
            };
            prompt = format!("{}\n{prompt}", intake.block(&answered));
        }
        first_turn = false;
        let user = match (&setup.wrapped, resume.as_deref()) {
            (Some(wrapped), Some(session)) if paused => {
                wrapped.resumed(session).map_err(RunError::Unresumable)?
            }
            (Some(wrapped), _) => wrapped.clone(),
            (None, _) => hark_core::agent::base_command_for(
                setup.kind,
                &setup.agent,
                (!paused).then_some(prompt.as_str()),
                resume.as_deref(),
            ),
        };
        paused = false;
        let composed = hark_core::agent::compose_for(
            setup.kind,
            user,
            args.verb,
            setup.attach(),
            read_only.as_ref(),
        );
        let turn = agent::run_agent(
            composed,
            &setup.confine,
            setup.kind,
            args.cwd.as_ref(),
            resumed_env.as_ref(),
            stop.clone(),
        )
        .await?;
        // The resumed call went on: nobody else is to resume it.
        drop(resumed_file.take());
        if turn.stopped {
            return Ok(turn.status);
        }
        if let Some(tool_use_id) = turn.deferred.clone() {
            let Some(session) = turn.session.clone() else {
                eprintln!(
                    "hark: the agent paused but reported no session id; it cannot be resumed"
                );
                return Ok(turn.status);
            };
            parked = Some(paused::Parked::hold(setup, &origin, session, tool_use_id));
            continue;
        }
        kept.cost_usd += turn.cost_usd;
        if turn.result.is_some() {
            kept.last_result.clone_from(&turn.result);
        }
        if args.verb != Verb::Converse || args.wrap {
            return Ok(turn.status);
        }
        let Some(session) = turn.session else {
            eprintln!("hark: the agent reported no session id; the conversation cannot go on");
            return Ok(turn.status);
        };
        resume = Some(session);
        let next = async {
            if setup.dispatched {
                operator::next_message(run_socket.as_deref(), turn.result.as_deref()).await
            } else {
                operator::next_message_from_terminal().await
            }
        };
        let next = match unless_stopped(&mut stop, next).await {
            Ok(next) => next,
            Err(received) => return stopped(received),
        };
        match next {
            Some(message) => prompt = message,
            None => return Ok(turn.status),
        }
    }
}
