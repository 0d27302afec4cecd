//! The team's hub under load: one nats-server (JetStream, nkey users with
//! the roles' permissions), three operators' daemons on it (`hark serve`
//! with `[hub]`, a script that answers nothing), many idle agent-only hosts
//! connected (`hark mcp-operator-ask --hub`, each holding a hub connection;
//! a watch only while it waits on a question), and a burst of concurrent asks
//! spread over the three daemons, each answered with `hark answer` on
//! another daemon than the asker's.
//!
//! It measures what the hub adds, against the same round on one daemon
//! with no hub (asked and answered there), on freshly started daemons; then
//! the same again on the same daemons (a daemon runs all day: its store's
//! log file has grown and its caches are warm), reported beside and checked
//! the same way:
//!
//! - ask → notification: the ask written to the agent's MCP server → the
//!   `operator.question.asked` line of each *other* daemon (without a hub:
//!   of the one daemon);
//! - answer → agent: `hark answer` started → the asking agent's tool
//!   result read (answered one at a time, all the asks still pending);
//!
//! and the memory of an idle agent, the nats-server and each daemon, before
//! the idle agents, with them, and with the asks pending. It checks every
//! ask was answered exactly once: each agent got exactly one result, with
//! the answer given, and every daemon's `hark inbox --all --json` records
//! that answer for every item.
//!
//! Idle agents that would not fit in memory are emulated, and the report
//! says how many: an async-nats client with an agent's credential holding
//! the same watch a real one holds.
//!
//! # Layout
//!
//! - this module: the plan, the errors, [`measure`] (the order of things).
//! - `team`: the nats-server and the operators' daemons.
//! - `idle`: the idle agents, real processes and emulated ones.
//! - `round`: one round of concurrent asks, answered one by one, timed;
//!   `logs` reads the daemons' events for it.
//! - `check`: every daemon's inbox at the end.
//! - `report`: the table and the final JSON line.

mod check;
mod idle;
mod logs;
mod report;
mod round;
mod team;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hark_harness::{DaemonError, NatsError, ProcessError, SandboxError, WaitError};

pub use report::report;

use check::StoreCheck;
use idle::{Idle, IdleError, IdleFigures};
use round::{Round, RoundError};
use team::{Host, Memory, Team};

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Idle agent-only hosts connected during the round.
    pub idle: usize,
    /// At most this many of them real processes (the rest emulated);
    /// fewer when memory runs short.
    pub idle_processes: usize,
    /// Concurrent asks.
    pub asks: usize,
}

/// How long every daemon may take to show all the asks.
const ASK_PATIENCE: Duration = Duration::from_secs(60);
/// How long one answer may take to reach its agent.
const ANSWER_PATIENCE: Duration = Duration::from_secs(30);
/// After the last result, how long the agents are still read, so a second
/// result for a call would be counted.
const LINGER: Duration = Duration::from_millis(300);

/// Why the bench could not run to the end (what it found wrong is in its
/// [`Results`]).
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Nats(#[from] NatsError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error("hark serve on {host} did not join the hub")]
    NotOnHub {
        host: String,
        #[source]
        source: WaitError,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Idle(#[from] IdleError),
    #[error("the {round} round")]
    Round {
        round: &'static str,
        #[source]
        source: RoundError,
    },
    #[error("cannot stop hark serve on {host}")]
    Stop {
        host: String,
        #[source]
        source: ProcessError,
    },
}

/// What the bench measured and found.
#[derive(Debug)]
pub struct Results {
    pub plan: Plan,
    /// One daemon, no hub: the measured round, then the same again.
    pub baseline: Round,
    pub baseline_again: Round,
    pub baseline_store: Vec<StoreCheck>,
    /// Three daemons on the hub, the idle agents connected: the measured
    /// round, then the same again.
    pub hub: Round,
    pub hub_again: Round,
    pub hub_store: Vec<StoreCheck>,
    pub idle: IdleFigures,
    /// Before the idle agents, with them, with the asks pending; then the
    /// peaks (`VmHWM`) at the end.
    pub before: Memory,
    pub with_idle: Memory,
    pub with_asks: Memory,
    pub peak: Memory,
    /// Every daemon, the baseline's too, exited cleanly on SIGTERM.
    pub daemons_clean_exit: bool,
}

/// Runs the baseline, then the team's round, with `hark` from `bin_dir`.
pub fn measure(bin_dir: &Path, plan: Plan) -> Result<Results, HubError> {
    let (baseline, baseline_again, baseline_store, solo_clean_exit) = baseline(bin_dir, plan.asks)?;

    let team = Team::start(bin_dir, plan.idle)?;
    let before = team.memory();
    let mut idle = Idle::start(bin_dir, &team, plan)?;
    let with_idle = team.memory();
    let mut with_asks = None;
    let hosts: Vec<&Host> = team.operators.iter().collect();
    let hub = round("hub", &hosts, plan.asks, || {
        with_asks = Some(team.memory());
    })?;
    let hub_again = round("hub-again", &hosts, plan.asks, || {})?;
    let hub_store = hosts
        .iter()
        .enumerate()
        .flat_map(|(i, h)| check::store(h, i, hosts.len(), &[&hub, &hub_again]))
        .collect();
    let idle_figures = idle.finish();
    let peak = team.peak();
    let daemons_clean_exit = team.stop()?;
    Ok(Results {
        plan,
        baseline,
        baseline_again,
        baseline_store,
        hub,
        hub_again,
        hub_store,
        idle: idle_figures,
        before,
        with_idle,
        with_asks: with_asks.unwrap_or_default(),
        peak,
        daemons_clean_exit: daemons_clean_exit && solo_clean_exit,
    })
}

/// A round on `hosts`, its error named.
fn round(
    label: &'static str,
    hosts: &[&Host],
    asks: usize,
    pending: impl FnOnce(),
) -> Result<Round, HubError> {
    Round::run(label, hosts, asks, pending).map_err(|source| HubError::Round {
        round: label,
        source,
    })
}

/// The same rounds on one daemon with no hub, asked and answered there.
/// The measured round, the same again, its inbox, and whether the daemon
/// exited cleanly.
fn baseline(
    bin_dir: &Path,
    asks: usize,
) -> Result<(Round, Round, Vec<StoreCheck>, bool), HubError> {
    let solo = Host::solo(bin_dir)?;
    let measured = round("baseline", &[&solo], asks, || {})?;
    let again = round("baseline-again", &[&solo], asks, || {})?;
    let store = check::store(&solo, 0, 1, &[&measured, &again]);
    let clean = solo.stop()?;
    Ok((measured, again, store, clean))
}
