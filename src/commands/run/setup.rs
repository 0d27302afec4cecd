//! What a run needs before its first turn: its id and session, the agent
//! and how it is composed, the relay to the operator, the confinement, and
//! the record it reports to the store.

use std::path::{Path, PathBuf};

use hark_core::agent::{AgentKind, Attached, ReadOnly, UserCommand};
use hark_core::bridge::client;
use hark_core::bridge::relay::{Relay, RunDir};
use hark_core::bridge::socket;
use hark_core::bridge::wire::ClientFrame;
use hark_core::config::{Config, OnTimeout};
use hark_core::confine::{self, Confinement};
use hark_core::daemon::listener::MAX_TIMEOUT;
use hark_core::model::ids::{Ids, RunId, SessionId};
use hark_core::model::run::RunStart;

use super::plan::Plan;
use super::{RunError, agent, paused};

/// Everything a run needs before its first turn. Dropping it removes the
/// run's socket and config files.
pub(super) struct Setup {
    pub(super) run_id: RunId,
    pub(super) session: SessionId,
    /// The daemon dispatched this run: it has no terminal, so a
    /// conversation asks in the app.
    pub(super) dispatched: bool,
    pub(super) app_socket: PathBuf,
    /// The relay to the operator and what the agent is given of it, when
    /// one is attached.
    pub(super) bridge: Option<(Relay, Attached)>,
    /// A read-only run with nobody attached still gets `approve`, to be
    /// told why each write is denied.
    pub(super) headless_gate: Option<(RunDir, PathBuf)>,
    /// The agent command.
    pub(super) agent: PathBuf,
    /// Which CLI it is.
    pub(super) kind: AgentKind,
    /// With `--wrap`, the user's own command line, read once.
    pub(super) wrapped: Option<UserCommand>,
    /// Where the agent works, absolute: a read-only run's sandbox names it.
    pub(super) cwd: PathBuf,
    /// Where the agent runs: out of the operator's reach, unless it cannot
    /// be or was not wanted.
    pub(super) confine: confine::Plan,
    /// What holds each turn's agent and everything it starts (Windows: the
    /// run's named job object, made before the run reports its start).
    pub(super) job: agent::Job,
}

impl Setup {
    /// `resumed` names a paused run this one takes over.
    /// `daemon` is the socket of the daemon to use instead of the
    /// operator's (the hub's agents' daemon of `--hub`), where nothing
    /// parks.
    pub(super) async fn new(
        plan: &Plan,
        config: &Config,
        resumed: Option<RunId>,
        daemon: Option<&Path>,
    ) -> Result<Setup, RunError> {
        let app_socket = match daemon {
            Some(socket) => socket.to_owned(),
            None => socket::app_socket_path()?,
        };
        let attached = hark_core::platform::connect(&app_socket).await.is_ok();
        let (run_id, session, dispatched) = identity(plan, resumed);
        let (agent, kind) = (plan.agent.clone(), plan.kind);
        check_sandbox(plan)?;
        let wrapped = wrapped(plan)?;
        let user_configs = wrapped.as_ref().map_or(&[][..], |u| &u.mcp_configs[..]);
        let servers = agent::existing_servers(user_configs)?;
        let hark = std::env::current_exe().map_err(RunError::ThisHark)?;
        // The agent's server: `hark-ask` when it is installed beside `hark`.
        let ask = hark_mcp::start::ask_server(&hark);
        let config_json = hark_core::agent::mcp_config(&ask, servers, plan.read_only).to_string();
        // What the agent's side of hark reads of the config, in the run's
        // own directory: the operator's file is hidden from the agent.
        let agent_part = Config::agent_part()?;
        let write_config = |dir: &RunDir| {
            dir.write_private(confine::AGENT_CONFIG, agent_part.as_bytes())
                .map_err(RunError::WriteConfig)?;
            dir.write_private("mcp.json", config_json.as_bytes())
                .map_err(RunError::WriteConfig)
        };
        let bridge = if attached {
            let relay = Relay::start(app_socket.clone(), run_id, session.clone())?;
            let mcp_config = write_config(&relay.dir)?;
            let parks = daemon.is_none()
                && plan.on_timeout == OnTimeout::Park
                && kind_parks(plan)
                && wrap_parks(wrapped.as_ref());
            let mut attach = attachment(plan, &hark, &relay, mcp_config, &session, parks);
            if kind == AgentKind::Gemini {
                attach.mcp_config = gemini_home(&relay.dir, &attach)?;
            }
            Some((relay, attach))
        } else {
            None
        };
        // Codex's writes are held by its own sandbox, with no `approve`.
        let headless_gate = if bridge.is_none() && plan.read_only && kind == AgentKind::Claude {
            let dir = RunDir::create()?;
            let config = write_config(&dir)?;
            Some((dir, config))
        } else {
            None
        };
        let cwd = working_dir(plan)?;
        let run_dirs: Vec<&Path> = bridge
            .iter()
            .map(|(relay, _)| relay.dir.path())
            .chain(headless_gate.iter().map(|(dir, _)| dir.path()))
            .collect();
        let program = match (&wrapped, plan.words.first()) {
            (Some(_), Some(first)) => PathBuf::from(first),
            _ => agent.clone(),
        };
        let confine = confinement(plan, config, &cwd, &run_dirs, &program);
        let job = agent::Job::new(run_id)?;
        Ok(Setup {
            job,
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

    pub(super) fn attach(&self) -> Option<&Attached> {
        self.bridge.as_ref().map(|(_, attach)| attach)
    }

    /// The MCP config carrying `approve` and the directory the agent works
    /// in, for a read-only run.
    pub(super) fn read_only(&self, plan: &Plan) -> Option<ReadOnly> {
        if !plan.read_only {
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

    /// The variables the agent is started with besides its own: the
    /// run's copy of the config ([`confine::AGENT_CONFIG`]) for the
    /// agent's side of hark, when the run has a directory.
    pub(super) fn agent_env(&self) -> Option<(&'static str, PathBuf)> {
        let dir = self
            .bridge
            .as_ref()
            .map(|(relay, _)| relay.dir.path())
            .or(self.headless_gate.as_ref().map(|(dir, _)| dir.path()))?;
        Some((hark_core::env::CONFIG, dir.join(confine::AGENT_CONFIG)))
    }

    /// The run's own socket, through which it asks the operator.
    pub(super) fn run_socket(&self) -> Option<PathBuf> {
        self.bridge.as_ref().map(|(relay, _)| relay.socket.clone())
    }

    /// Says on stderr what this run is and who can answer it.
    pub(super) fn announce(&self, plan: &Plan) {
        let codex = self.kind == AgentKind::Codex;
        let opencode = self.kind == AgentKind::Opencode;
        let gemini = self.kind == AgentKind::Gemini;
        eprintln!(
            "hark: run {} ({}), {}",
            self.run_id.short(),
            self.session,
            match (self.bridge.is_some(), plan.read_only) {
                (true, false) => "the operator is attached: the agent can ask",
                (true, true) if codex => {
                    "read-only in Codex's sandbox, which refuses every write; the operator is attached: the agent can ask"
                }
                (true, true) if opencode => {
                    "read-only: OpenCode's edit and bash tools are denied; the operator is attached: the agent can ask"
                }
                (true, true) if gemini => {
                    "read-only: gemini -p offers no tool that writes or runs a shell; the operator is attached: the agent can ask"
                }
                (true, true) => "read-only: the operator is attached to approve writes",
                (false, false) => "no operator attached: the agent proceeds on its own",
                (false, true) if codex => {
                    "read-only in Codex's sandbox with no operator attached: every write is refused"
                }
                (false, true) if opencode => {
                    "read-only: OpenCode's edit and bash tools are denied, and no operator is attached"
                }
                (false, true) if gemini => {
                    "read-only: gemini -p offers no tool that writes or runs a shell, and no operator is attached"
                }
                (false, true) => "read-only with no operator attached: every write is denied",
            }
        );
        match &self.confine.confinement {
            Confinement::Confined { by } => eprintln!(
                "hark: confined by {by}: hark's socket, store, config and the secret files it names do not exist for the agent; shell startup files, git hooks and config, and PATH's directories in $HOME are read-only{}; what listens on this host's network, loopback included (the web surface when it is on), stays reachable",
                self.confine.scope_note()
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
    pub(super) async fn record(&self, frame: ClientFrame) {
        if self.bridge.is_none() {
            return;
        }
        if let Err(e) = client::request(&self.app_socket, &frame).await {
            tracing::debug!("the run was not recorded: {e}");
        }
    }

    /// The run as `hark run` announces it to the store.
    pub(super) fn start_record(&self, plan: &Plan) -> RunStart {
        let words = plan.prompt();
        let command = match (plan.wrap, self.kind) {
            (true, _) => words,
            (false, AgentKind::Claude | AgentKind::Gemini) => {
                format!("{} -p {words}", self.agent.display())
            }
            (false, AgentKind::Codex) => format!("{} exec {words}", self.agent.display()),
            (false, AgentKind::Opencode) => format!("{} run {words}", self.agent.display()),
        };
        let cwd = plan.cwd.clone().or_else(|| std::env::current_dir().ok());
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

/// The run's id and session, and whether the daemon dispatched it. A run
/// the daemon dispatched comes with its id (the daemon already told its
/// caller); a resumed one keeps its own, and with no terminal (the
/// daemon's) it converses in the app.
fn identity(plan: &Plan, resumed: Option<RunId>) -> (RunId, SessionId, bool) {
    let dispatched_id = std::env::var(hark_core::env::RUN_ID)
        .ok()
        .and_then(|id| id.parse::<RunId>().ok());
    let dispatched = dispatched_id.is_some() || (resumed.is_some() && !paused::has_terminal());
    let run_id = resumed
        .or(dispatched_id)
        .unwrap_or_else(|| Ids::random().run());
    let session = SessionId::from(
        plan.session
            .clone()
            .unwrap_or_else(|| format!("run-{}", run_id.short())),
    );
    (run_id, session, dispatched)
}

/// A read-only run turns on Claude Code's Bash sandbox, which would refuse
/// to start without its programs: say so before starting it (Codex's
/// read-only sandbox is its own; OpenCode's read-only is its permissions,
/// Gemini CLI's the tools `-p` leaves out).
fn check_sandbox(plan: &Plan) -> Result<(), RunError> {
    if plan.read_only && plan.kind == AgentKind::Claude {
        let missing = hark_core::agent::sandbox::missing();
        if !missing.is_empty() {
            return Err(RunError::NoSandbox { missing });
        }
    }
    Ok(())
}

/// With `--wrap`, the user's own command line, with its settings read once:
/// hark merges its own (a read-only run's sandbox, the park hook) into them.
fn wrapped(plan: &Plan) -> Result<Option<UserCommand>, RunError> {
    let words = &plan.words;
    let mut wrapped = match (plan.wrap, plan.kind) {
        (false, _) => None,
        (true, AgentKind::Claude) => Some(UserCommand::parse(words)?),
        (true, AgentKind::Codex) => {
            let user = UserCommand::verbatim(words)?;
            hark_core::agent::codex::check_wrapped(&user)?;
            Some(user)
        }
        (true, AgentKind::Opencode) => {
            let user = UserCommand::verbatim(words)?;
            hark_core::agent::opencode::check_wrapped(&user)?;
            Some(user)
        }
        (true, AgentKind::Gemini) => {
            let user = UserCommand::verbatim(words)?;
            hark_core::agent::gemini::check_wrapped(&user)?;
            Some(user)
        }
    };
    if let Some(settings) = wrapped.as_mut().and_then(|w| w.settings.as_mut()) {
        *settings = agent::existing_settings(settings)?;
    }
    Ok(wrapped)
}

/// What the agent is given of the relay to the operator; `parks`: a
/// question nobody answers in time parks it.
fn attachment(
    plan: &Plan,
    hark: &Path,
    relay: &Relay,
    mcp_config: PathBuf,
    session: &SessionId,
    parks: bool,
) -> Attached {
    Attached {
        // `hark-ask` when it is installed beside this `hark`.
        hark: hark_mcp::start::ask_server(hark),
        socket: relay.socket.clone(),
        mcp_config,
        session_id: session.clone(),
        // Only a wait given here is sent: without one the daemon's own
        // applies, which can be as long as it allows.
        ask_timeout: plan.timeout,
        longest_wait: plan.timeout.unwrap_or(MAX_TIMEOUT),
        park_hook: parks.then(|| hark_core::agent::hooks::hook_command(hark)),
    }
}

/// The run's Gemini home in `dir` ([`hark_core::agent::gemini::prepare_home`]):
/// the user's Gemini settings with hark's server merged in; returns its
/// settings file.
fn gemini_home(dir: &RunDir, attach: &Attached) -> Result<PathBuf, RunError> {
    use hark_core::agent::gemini;
    let home = gemini::user_home();
    let theirs = gemini::user_settings(home.as_deref())?;
    let config = dir.path().join(confine::AGENT_CONFIG);
    let settings = gemini::settings(theirs, attach, &config);
    gemini::prepare_home(dir.path(), home.as_deref(), &settings).map_err(RunError::WriteConfig)
}

/// Where the agent works, absolute.
fn working_dir(plan: &Plan) -> Result<PathBuf, RunError> {
    let cwd = match &plan.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(RunError::Cwd)?,
    };
    Ok(std::fs::canonicalize(&cwd).unwrap_or(cwd))
}

/// Where the agent runs: out of the operator's places, but for the run's
/// own directories and the agent's own `program` (should it live in a temp
/// directory).
fn confinement(
    plan: &Plan,
    config: &Config,
    cwd: &Path,
    run_dirs: &[&Path],
    program: &Path,
) -> confine::Plan {
    let mut operator = confine::Session::current();
    // Where it is found and where it really is: npm's `.bin/claude` is a
    // link to `../@anthropic-ai/claude-code/bin/claude.exe`.
    if let Some(found) = hark_core::platform::find_program(program) {
        let real = std::fs::canonicalize(&found).ok();
        for path in std::iter::once(found).chain(real) {
            if let Some(dir) = path
                .parent()
                .filter(|d| !operator.programs.iter().any(|p| p == d))
            {
                operator.programs.push(dir.to_path_buf());
            }
        }
    }
    operator.secrets = config.secret_files();
    confine::plan(&operator, cwd, run_dirs, &config.confine, plan.confine)
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

/// Whether an agent of this kind can park; says why not. Only Claude
/// Code has a hook that pauses a call and a way to resume it; Codex,
/// OpenCode and Gemini CLI have neither (OpenCode's MCP client ends a
/// call its server does not answer, and `run --session` starts a new
/// message, not the call again; Gemini CLI's `timeout` cuts any call).
fn kind_parks(plan: &Plan) -> bool {
    let name = match plan.kind {
        AgentKind::Claude => return true,
        AgentKind::Codex => "Codex",
        AgentKind::Opencode => "OpenCode",
        AgentKind::Gemini => "Gemini CLI",
    };
    let wait = match plan.timeout {
        Some(timeout) => format!("{} s", timeout.as_secs_f64()),
        None => "the operator's bounded wait".to_owned(),
    };
    eprintln!(
        "hark: {name} has no hook that pauses a call, so a question nobody answers within {wait} times out and the agent proceeds on its own"
    );
    false
}
