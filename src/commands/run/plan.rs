//! A run's options resolved once, against the config, into what the run
//! does (as uv's `RunSettings::resolve`): the agent and its kind, whether a
//! question nobody answers parks it, its wait, its intake. What follows
//! (the [`Setup`](super::Setup), the turns) reads this plan, never the
//! options as given.

use std::path::PathBuf;
use std::time::Duration;

use hark_core::agent::{AgentKind, Verb};
use hark_core::bridge::options::{IntakeSource, RunOptions};
use hark_core::config::{Config, OnTimeout};
use hark_core::gate::intake::{Given, Intake};

use super::RunError;

/// What one run does.
#[derive(Debug)]
pub(super) struct Plan {
    pub verb: Verb,
    /// The prompt's words, or with `wrap` the user's own command line.
    pub words: Vec<String>,
    pub wrap: bool,
    /// The working directory named, as named (the agent's own when absent).
    pub cwd: Option<PathBuf>,
    /// The session named.
    pub session: Option<String>,
    /// The wait for each question, when one was given (else the daemon's).
    pub timeout: Option<Duration>,
    /// A question nobody answers in time parks the agent (the option, else
    /// the config's).
    pub on_timeout: OnTimeout,
    /// The agent command.
    pub agent: PathBuf,
    /// Which CLI it is.
    pub kind: AgentKind,
    pub read_only: bool,
    /// Confined unless `no_confine` said otherwise (the config may still
    /// turn it off for every run).
    pub confine: bool,
    /// The intake, and the answers given to it; none for a resumed run,
    /// whose intake was answered before it paused.
    pub intake: Option<(Intake, Given)>,
    /// The team's hub to ask directly (`""`: the config's).
    pub hub: Option<String>,
}

impl Plan {
    /// The plan of `options` under `config`; `resumed`: the run is taken
    /// over after a pause. Every option is named here: a new one does not
    /// compile until it is resolved.
    pub fn resolve(options: RunOptions, config: &Config, resumed: bool) -> Result<Plan, RunError> {
        let RunOptions {
            verb,
            cwd,
            session,
            timeout_secs,
            on_timeout,
            agent,
            agent_kind,
            wrap,
            read_only,
            no_confine,
            intake,
            answers,
            // Handed to the daemon before a plan is made (`run`).
            detach: _,
            hub,
            words,
        } = options;
        let intake = match resumed {
            true => None,
            false => intake_of(intake.as_ref(), &answers, wrap)?,
        };
        if words.is_empty() {
            return Err(RunError::Usage(if wrap {
                "--wrap needs the agent command after --, e.g. hark run --wrap -- claude -p \"…\""
            } else {
                "say what to do: hark run -- PROMPT…"
            }));
        }
        let timeout = timeout_secs
            .map(|secs| match Duration::try_from_secs_f64(secs) {
                Ok(wait) if !wait.is_zero() => Ok(wait),
                _ => Err(RunError::Timeout(secs)),
            })
            .transpose()?;
        let (agent, kind) = agent_of(agent, agent_kind, &words, wrap, config);
        Ok(Plan {
            verb,
            words,
            wrap,
            cwd,
            session,
            timeout,
            on_timeout: on_timeout.unwrap_or(config.on_timeout),
            agent,
            kind,
            read_only,
            confine: !no_confine,
            intake,
            hub,
        })
    }

    /// The prompt: the words, one space between each.
    pub fn prompt(&self) -> String {
        self.words.join(" ")
    }
}

/// The intake (`--intake FILE`, or its JSON), and the answers `--answer` gave.
fn intake_of(
    intake: Option<&IntakeSource>,
    answers: &[String],
    wrap: bool,
) -> Result<Option<(Intake, Given)>, RunError> {
    let Some(source) = intake else {
        if !answers.is_empty() {
            return Err(RunError::Usage(
                "--answer gives intake answers; name the intake with --intake FILE",
            ));
        }
        return Ok(None);
    };
    if wrap {
        return Err(RunError::Usage(
            "--intake puts its answers into the prompt, so it needs a prompt, not --wrap",
        ));
    }
    let intake = match source {
        IntakeSource::File(path) => Intake::load(path)?,
        IntakeSource::Inline(value) => Intake::from_value(value.clone())?,
    };
    let given = given(&intake, answers)?;
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

/// The agent command and which CLI it is: the kind named, else the one the
/// command's name says; the command named, else the kind's own (`claude`,
/// `codex`, `opencode`, `gemini`) on PATH.
fn agent_of(
    agent: Option<PathBuf>,
    agent_kind: Option<AgentKind>,
    words: &[String],
    wrap: bool,
    config: &Config,
) -> (PathBuf, AgentKind) {
    let named_kind = agent_kind.or(config.agent_kind);
    // A kind asked for here takes the config's command only if it is
    // that kind's (the New run form's Codex, over a configured claude).
    let configured = config.agent_command.clone().filter(|command| {
        agent_kind.is_none_or(|kind| {
            config
                .agent_kind
                .unwrap_or_else(|| AgentKind::of_program(command))
                == kind
        })
    });
    let agent = agent
        .or(configured)
        .unwrap_or_else(|| PathBuf::from(named_kind.unwrap_or_default().name()));
    let kind = named_kind.unwrap_or_else(|| match words.first().filter(|_| wrap) {
        Some(program) => AgentKind::of_program(program.as_ref()),
        None => AgentKind::of_program(&agent),
    });
    (agent, kind)
}
