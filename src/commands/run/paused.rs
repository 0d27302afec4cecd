//! A run whose agent is paused on a parked question: it waits for the
//! operator, and keeps what resuming it needs in a paused-run file
//! ([`hark_core::store::paused`]) so that, should this process go (a reboot,
//! a signal, a closed terminal), the daemon or `hark resume` takes it over.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Parser;

use hark_core::bridge::options::RunOptions;
use hark_core::files::NoHomeError;
use hark_core::model::ids::RunId;
use hark_core::model::item::Outcome;
use hark_core::store::paused::{Held, Paused, PausedRun, TakeError};

use super::signals::{Received, StopSignals};
use super::{Setup, Stop, operator};
use crate::cli::{Cli, Command, ResumeArgs};
use crate::exit::ExitStatus;

/// The agent's call that parked, and the file that lets another process
/// resume it.
pub(super) struct Parked {
    pub agent_session: String,
    pub tool_use_id: String,
    /// `None` when it could not be written: only this process can resume
    /// the run then.
    pub held: Option<Held>,
}

/// How the wait for a parked call ended.
pub(super) enum Waited {
    /// Settled (or unknown to the daemon): resume the agent.
    Resume,
    /// The operator cancelled the run.
    Cancelled(String),
}

/// What a run started with, which resuming it starts with again: its
/// `hark run` arguments, directory and environment.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    /// `None` when they cannot be kept (not UTF-8).
    pub args: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    /// The agent's environment (before hark's own variables).
    pub env: BTreeMap<String, String>,
}

impl Origin {
    /// This process's: the arguments after `run`, and its UTF-8 variables.
    pub fn this_process() -> Origin {
        Origin {
            args: std::env::args_os()
                .skip(2)
                .map(|a| a.into_string().ok())
                .collect(),
            cwd: std::env::current_dir().ok(),
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }
}

impl Parked {
    /// Parks: writes the paused-run file of `setup`'s run (with what it
    /// started with) and holds it.
    pub fn hold(
        setup: &Setup,
        origin: &Origin,
        agent_session: String,
        tool_use_id: String,
    ) -> Parked {
        let held = origin.args.as_ref().and_then(|args| {
            let run = PausedRun {
                run_id: setup.run_id,
                session: setup.session.clone(),
                agent_session: agent_session.clone(),
                tool_use_id: tool_use_id.clone(),
                args: args.clone(),
                cwd: origin.cwd.clone()?,
                env: origin.env.clone(),
            };
            let held = Paused::of_user()
                .map_err(ResumeError::from)
                // As it is: "it resumes when the operator answers" is said
                // of a run taken over, not of this one.
                .and_then(|paused| paused.hold(&run).map_err(ResumeError::File));
            match held {
                Ok(held) => Some(held),
                Err(e) => {
                    eprintln!(
                        "hark: the paused run cannot be kept for later ({e}); only this process can resume it"
                    );
                    None
                }
            }
        });
        Parked {
            agent_session,
            tool_use_id,
            held,
        }
    }

    /// Waits for the operator to settle the parked call. A stop signal (or
    /// Ctrl-C) leaves the run parked for the daemon to resume once it is
    /// answered: the question is the operator's, not this terminal's.
    pub async fn wait(&mut self, setup: &Setup, stop: &mut StopSignals) -> Result<Waited, Stop> {
        let settled = operator::await_parked(&setup.app_socket, &self.tool_use_id, &setup.session);
        let interrupted = async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Received {
                    name: "Ctrl-C",
                    number: 2,
                },
                Err(_) => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            outcome = settled => outcome,
            received = stop.arrived() => return Err(self.handed_over(received)),
            received = interrupted => return Err(self.handed_over(received)),
        };
        match outcome {
            Some(Outcome::Cancelled { reason }) => Ok(Waited::Cancelled(reason)),
            Some(outcome) => {
                eprintln!(
                    "hark: the operator settled it ({}); resuming the agent",
                    outcome.name()
                );
                Ok(Waited::Resume)
            }
            None => Ok(Waited::Resume),
        }
    }

    /// Lets the paused-run file outlive this process.
    fn handed_over(&mut self, received: Received) -> Stop {
        let kept = self.held.take().map(Held::keep).is_some();
        Stop::Paused { received, kept }
    }
}

/// `hark resume RUN_ID`: takes over a paused run whose `hark run` is gone,
/// waits for its question to be settled, and resumes the agent, here.
pub async fn resume(args: ResumeArgs) -> ExitStatus {
    match take(&args.run_id) {
        Ok((options, resuming)) => super::finish(super::run_to_end(options, Some(resuming)).await),
        Err(e) => {
            eprintln!("hark: {e}");
            ExitStatus::Failure
        }
    }
}

/// Why a paused run cannot be kept for later, or taken over.
#[derive(Debug, thiserror::Error)]
enum ResumeError {
    #[error("{0:?} is not a run id (see `hark runs`)")]
    NotARunId(String),
    #[error(transparent)]
    NoHome(#[from] NoHomeError),
    /// Another process still has it: it resumes the run itself.
    #[error("{0}; it resumes when the operator answers (`hark inbox`)")]
    Held(TakeError),
    #[error(transparent)]
    File(TakeError),
    #[error("the paused run {run_id} keeps arguments this hark does not take: {args:?}")]
    Arguments { run_id: RunId, args: Vec<String> },
}

impl From<TakeError> for ResumeError {
    fn from(e: TakeError) -> ResumeError {
        match e {
            TakeError::Held(_) => ResumeError::Held(e),
            other => ResumeError::File(other),
        }
    }
}

/// A paused run being taken over.
pub(super) struct Resuming {
    pub run_id: RunId,
    pub parked: Parked,
    /// What it started with: its agent is resumed in that environment, and
    /// it is kept again should the run park again.
    pub origin: Origin,
}

/// The paused run `id`, taken over: its `hark run` options (with its
/// directory made explicit) and its parked call.
fn take(id: &str) -> Result<(RunOptions, Resuming), ResumeError> {
    let run_id: RunId = id
        .parse()
        .map_err(|_| ResumeError::NotARunId(id.to_owned()))?;
    let (run, held) = Paused::of_user()?.take(&run_id)?;
    let words = std::iter::once("hark".to_owned())
        .chain(std::iter::once("run".to_owned()))
        .chain(run.args.iter().cloned());
    let Ok(Cli {
        command: Some(Command::Run(run_args)),
    }) = Cli::try_parse_from(words)
    else {
        return Err(ResumeError::Arguments {
            run_id,
            args: run.args,
        });
    };
    let mut options = run_args.options();
    options.cwd = Some(run.cwd.join(options.cwd.take().unwrap_or_default()));
    let parked = Parked {
        agent_session: run.agent_session,
        tool_use_id: run.tool_use_id,
        held: Some(held),
    };
    Ok((
        options,
        Resuming {
            run_id,
            parked,
            origin: Origin {
                args: Some(run.args),
                cwd: Some(run.cwd),
                env: run.env,
            },
        },
    ))
}

/// Whether a resumed run has a terminal to converse on.
pub(super) fn has_terminal() -> bool {
    std::io::stdin().is_terminal()
}
