//! `hark run`: dispatches an agent (`claude -p` by default) with the bridge
//! attached when an operator is, shows its progress from
//! `--output-format stream-json`, and exits with its exit status.
//!
//! - this module: the run from start to end — the turn loop, its record in
//!   the store;
//! - [`plan`]: the run's options resolved once, against the config, into
//!   what the run does ([`Plan`]); nothing after reads the options as given;
//! - [`setup`]: what it needs before the first turn ([`Setup`]): the
//!   agent, the relay to the operator, the confinement, the record;
//! - [`agent`]: one turn of the agent process and its stream ([`codex`]:
//!   Codex's events; [`opencode`]: OpenCode's; [`gemini`]: Gemini CLI's);
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
mod gemini;
mod opencode;
mod operator;
mod paused;
mod plan;
mod setup;
mod signals;

pub use error::RunError;
pub use paused::resume;

use std::path::Path;

use hark_core::agent::{AgentKind, Composed, ReadOnly, Verb};
use hark_core::bridge::options::RunOptions;
use hark_core::bridge::relay::RunDir;
use hark_core::bridge::wire::ClientFrame;
use hark_core::config::Config;
use hark_core::gate::intake::When;
use hark_core::store::paused::Held;

use plan::Plan;
use setup::Setup;
use signals::unless_stopped;
pub use signals::{Received, StopSignals};

use crate::cli::RunArgs;
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
    let options = args.options();
    if options.detach {
        return detach::run(options).await;
    }
    finish(run_to_end(options, None).await)
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
            ExitStatus::Agent(received.exit_code())
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

/// What the run's record keeps of its output: the last result, the cost
/// of every turn.
#[derive(Debug, Default)]
struct Kept {
    last_result: Option<String>,
    cost_usd: f64,
}

async fn run_to_end(options: RunOptions, resuming: Option<paused::Resuming>) -> Result<i32, Stop> {
    // Taken before anything starts, so no agent outlives a stop signal.
    let stop = StopSignals::listen();
    // The directories of runs that died by SIGKILL (which no process can
    // catch) go now.
    RunDir::sweep();
    let config = Config::load()?;
    // A resumed run's intake was answered before it paused.
    let plan = Plan::resolve(options, &config, resuming.is_some())?;
    // On a host with no daemon, one of its own asks the team's hub.
    let hub = match &plan.hub {
        Some(url) => Some(
            crate::commands::hub::AgentDaemon::start(url)
                .await
                .map_err(Box::new)?,
        ),
        None => None,
    };
    let daemon = hub.as_ref().map(|d| d.socket.as_path());
    let setup = Setup::new(&plan, &config, resuming.as_ref().map(|r| r.run_id), daemon).await?;
    setup.announce(&plan);
    // A resumed run reports itself again: its record then names this
    // process, which the daemon watches as the run's.
    setup
        .record(ClientFrame::RunStarted {
            run: setup.start_record(&plan),
        })
        .await;
    let mut kept = Kept::default();
    let result = turns(&plan, &setup, &mut kept, stop, resuming).await;
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
            // Codex and Gemini CLI report tokens, not a cost.
            cost_usd: matches!(setup.kind, AgentKind::Claude | AgentKind::Opencode)
                .then_some(kept.cost_usd),
        })
        .await;
    result
}

/// The agent's turns: one for a task, turn after turn for a conversation
/// (each resuming the agent's session) until the operator ends it.
async fn turns(
    plan: &Plan,
    setup: &Setup,
    kept: &mut Kept,
    mut stop: StopSignals,
    resuming: Option<paused::Resuming>,
) -> Result<i32, Stop> {
    let run_socket = setup.run_socket();
    let read_only = setup.read_only(plan);
    // A resumed run's agent gets the environment the run started with.
    let resumed_env = resuming.as_ref().map(|r| r.origin.env.clone());
    let mut next = Next::new(plan, resuming);
    loop {
        if let Some(ended) = next.settle_parked(setup, &mut stop).await? {
            return Ok(ended);
        }
        if let Some(ended) = next
            .ask_intake(plan, run_socket.as_deref(), &mut stop)
            .await?
        {
            return Ok(ended);
        }
        let composed = next.command(plan, setup, read_only.as_ref())?;
        let turn = agent::run_agent(
            composed,
            setup,
            plan.cwd.as_ref(),
            resumed_env.as_ref(),
            stop.clone(),
        )
        .await?;
        // The resumed call went on: nobody else is to resume it.
        drop(next.resumed_file.take());
        match turn.ending() {
            agent::Ending::Stopped => return Ok(turn.status),
            agent::Ending::Deferred(tool_use_id) => {
                if !next.park(setup, &turn, tool_use_id) {
                    return Ok(turn.status);
                }
                continue;
            }
            agent::Ending::Done => {}
        }
        kept.cost_usd += turn.cost_usd;
        if turn.result.is_some() {
            kept.last_result.clone_from(&turn.result);
        }
        if plan.verb != Verb::Converse || plan.wrap {
            return Ok(turn.status);
        }
        if let Some(ended) = next
            .converse(setup, turn, run_socket.as_deref(), &mut stop)
            .await
        {
            return Ok(ended);
        }
    }
}

/// Says the run ends on a stop signal; its exit code.
fn stopped(received: Received) -> i32 {
    eprintln!("hark: stopped by {}; the run ends", received.name);
    received.exit_code()
}

/// Which turn comes next, as its prompt and the intake go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnKind {
    /// The run's first: its prompt, after the intake.
    First,
    /// The agent paused on a question, resumed: no prompt, no intake.
    Resumed,
    /// A later turn (a conversation's next message, or the first of a run
    /// taken over): the intake again only if it is asked every turn.
    Later,
}

/// What the next turn is: its prompt, the agent session it resumes, the
/// parked call it waits on first.
struct Next {
    prompt: String,
    resume: Option<String>,
    kind: TurnKind,
    /// The parked call to wait on before the turn.
    parked: Option<paused::Parked>,
    /// What another process needs to resume this run, should it park.
    origin: paused::Origin,
    /// The paused-run file of the call the current turn resumes: it goes
    /// when the turn ends.
    resumed_file: Option<Held>,
}

impl Next {
    /// The first turn: the run's prompt, or the resumed run's parked call.
    fn new(plan: &Plan, resuming: Option<paused::Resuming>) -> Next {
        let kind = match resuming {
            None => TurnKind::First,
            Some(_) => TurnKind::Later,
        };
        let (parked, origin) = match resuming {
            Some(resuming) => (Some(resuming.parked), resuming.origin),
            None => (None, paused::Origin::this_process()),
        };
        Next {
            prompt: plan.prompt(),
            resume: None,
            kind,
            parked,
            origin,
            resumed_file: None,
        }
    }

    /// Waits for the operator to settle the parked call, if there is one,
    /// to resume it; the run's exit code when the operator cancelled it.
    async fn settle_parked(
        &mut self,
        setup: &Setup,
        stop: &mut StopSignals,
    ) -> Result<Option<i32>, Stop> {
        let Some(mut call) = self.parked.take() else {
            return Ok(None);
        };
        match call.wait(setup, stop).await? {
            paused::Waited::Cancelled(reason) => {
                eprintln!("hark: {reason}; the agent stays stopped and the run ends");
                return Ok(Some(ExitStatus::NotAnswered.code()));
            }
            paused::Waited::Resume => {}
        }
        self.resume = Some(call.agent_session);
        self.resumed_file = call.held;
        self.kind = TurnKind::Resumed;
        Ok(None)
    }

    /// Puts the intake to the operator (on the first turn, or every turn)
    /// and its answers before the prompt; the exit code if a stop signal
    /// came first.
    async fn ask_intake(
        &mut self,
        plan: &Plan,
        run_socket: Option<&Path>,
        stop: &mut StopSignals,
    ) -> Result<Option<i32>, Stop> {
        let Some((intake, given)) = &plan.intake else {
            return Ok(None);
        };
        let asked_now = match self.kind {
            TurnKind::First => true,
            TurnKind::Resumed => false,
            TurnKind::Later => intake.when == When::EveryTurn,
        };
        if !asked_now {
            return Ok(None);
        }
        let asked = operator::ask_intake(intake, given, run_socket);
        let answered = match unless_stopped(stop, asked).await {
            Ok(answered) => answered?,
            Err(received) => return Ok(Some(stopped(received))),
        };
        self.prompt = format!("{}\n{}", intake.block(&answered), self.prompt);
        Ok(None)
    }

    /// The agent's command line for this turn: the user's own (resumed,
    /// after a pause), or hark's with the prompt or the session resumed.
    fn command(
        &mut self,
        plan: &Plan,
        setup: &Setup,
        read_only: Option<&ReadOnly>,
    ) -> Result<Composed, Stop> {
        let user = match (&setup.wrapped, self.resume.as_deref()) {
            (Some(wrapped), Some(session)) if self.kind == TurnKind::Resumed => {
                wrapped.resumed(session).map_err(RunError::Unresumable)?
            }
            (Some(wrapped), _) => wrapped.clone(),
            (None, _) => hark_core::agent::base_command_for(
                setup.kind,
                &setup.agent,
                (self.kind != TurnKind::Resumed).then_some(self.prompt.as_str()),
                self.resume.as_deref(),
            ),
        };
        self.kind = TurnKind::Later;
        let mut composed =
            hark_core::agent::compose_for(setup.kind, user, plan.verb, setup.attach(), read_only);
        if let Some((name, value)) = setup.agent_env() {
            composed
                .env
                .insert(name.to_owned(), value.display().to_string());
        }
        Ok(composed)
    }

    /// The agent paused on `tool_use_id`: the next turn waits for it to be
    /// settled, and resumes it. False when it cannot be resumed.
    fn park(&mut self, setup: &Setup, turn: &agent::Turn, tool_use_id: String) -> bool {
        let Some(session) = turn.session.clone() else {
            eprintln!("hark: the agent paused but reported no session id; it cannot be resumed");
            return false;
        };
        self.parked = Some(paused::Parked::hold(
            setup,
            &self.origin,
            session,
            tool_use_id,
        ));
        true
    }

    /// The conversation's next message, from the operator, as the next
    /// turn's prompt; the exit code when the conversation ends.
    async fn converse(
        &mut self,
        setup: &Setup,
        turn: agent::Turn,
        run_socket: Option<&Path>,
        stop: &mut StopSignals,
    ) -> Option<i32> {
        let Some(session) = turn.session else {
            eprintln!("hark: the agent reported no session id; the conversation cannot go on");
            return Some(turn.status);
        };
        self.resume = Some(session);
        let next = async {
            if setup.dispatched {
                operator::next_message(run_socket, turn.result.as_deref()).await
            } else {
                operator::next_message_from_terminal().await
            }
        };
        match unless_stopped(stop, next).await {
            Ok(Some(message)) => {
                self.prompt = message;
                None
            }
            Ok(None) => Some(turn.status),
            Err(received) => Some(stopped(received)),
        }
    }
}
