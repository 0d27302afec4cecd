//! The idle agents: agent-only hosts that are connected to the hub and ask
//! nothing. A real one is `hark mcp-operator-ask --hub` (its own private
//! daemon and a hub connection with an agent's credential; it follows a
//! decision only while it waits on its own question), initialized over MCP
//! and then left waiting. As many as memory allows are real, started a
//! batch at a time; the rest are emulated in this process: an async-nats
//! client with an agent's credential holding a watch of the whole
//! decisions bucket, as agent hosts did before 02fb646 (more than a real
//! idle agent costs now), counting the decisions it reads.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use futures_util::StreamExt;
use hark_harness::Sandbox;

use super::team::{Team, hub_config, status_kib, write};
use super::{HubError, Plan};
use crate::logs::{LogFileError, Tail, log_file};
use crate::rpc::{Peer, RpcError};
use crate::stats::Summary;

/// What a real agent's stderr says when the server refused its watch
/// (`hark_hub`'s follower; it tries again on reconnecting or after 30 s).
const REFUSED_WATCH: &str = "cannot follow the hub";
/// Real agents started at once, before waiting for them to initialize.
const BATCH: usize = 50;
/// No more real agents once the machine has less memory available than
/// this, in MB (the rest are emulated).
const RESERVE_MB: u64 = 6000;
/// One agent's spawn → `initialize` response.
const START_PATIENCE: Duration = Duration::from_secs(60);
/// How long an emulated watcher may take to read every decision.
const DECISIONS_PATIENCE: Duration = Duration::from_secs(60);
/// One real agent's exit once its stdin closes.
const EXIT_PATIENCE: Duration = Duration::from_secs(20);

/// Why the idle agents could not be started.
#[derive(Debug, thiserror::Error)]
pub enum IdleError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error("idle agent {agent}{stderr}")]
    Agent {
        agent: usize,
        stderr: Tail,
        #[source]
        source: RpcError,
    },
    #[error("cannot start the emulated agents' runtime")]
    Runtime(#[source] std::io::Error),
    #[error("emulated agent {agent} cannot connect to the hub")]
    Connect {
        agent: usize,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("emulated agent {agent} cannot bind the decisions bucket")]
    Bucket {
        agent: usize,
        #[source]
        source: async_nats::jetstream::context::KeyValueError,
    },
}

/// What the idle agents cost and did.
#[derive(Debug, Default)]
pub struct IdleFigures {
    pub real: usize,
    pub emulated: usize,
    /// `MemAvailable` (MB) when real agents stopped for lack of memory.
    pub memory_short_mb: Option<u64>,
    /// The first spawn → every agent connected (real ones initialized).
    pub connect_ms: f64,
    /// A real agent's resident memory (`VmRSS`, MB), idle, and after the
    /// round (which every watch read).
    pub rss_idle_mb: Option<Summary>,
    pub rss_after_mb: Option<Summary>,
    /// Real agents still running after the round, and exiting cleanly
    /// (exit 0, only JSON-RPC on stdout) when their stdin closed.
    pub alive_after: usize,
    pub clean_exit: usize,
    /// Emulated watchers that read every decision of the round, and the
    /// fewest decisions one read.
    pub emulated_saw_all: usize,
    pub emulated_least_seen: Option<u64>,
    /// Agents the server refused a watch of the decisions bucket (a real
    /// one says so on stderr and tries again later), and the first reason.
    pub watch_refused: usize,
    pub first_refusal: Option<String>,
}

/// The emulated agents: their runtime, and what each read.
struct Emulated {
    runtime: tokio::runtime::Runtime,
    seen: Vec<Arc<AtomicU64>>,
    /// One message per watcher once it has read the round's decisions.
    saw_all: Receiver<()>,
    /// Why each refused watch was refused.
    refused: Vec<String>,
}

/// The idle agents, connected.
pub struct Idle {
    real: Vec<Peer>,
    emulated: Option<Emulated>,
    figures: IdleFigures,
    /// Keeps the real agents' configs and logs.
    sandbox: Sandbox,
}

impl std::fmt::Debug for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idle")
            .field("real", &self.real.len())
            .field("figures", &self.figures)
            .finish_non_exhaustive()
    }
}

impl Idle {
    /// Connects `plan.idle` agents, as many real as fit (at most
    /// `plan.idle_processes`), each with a credential of its own; the
    /// emulated ones count decisions up to `plan.asks`.
    pub fn start(bin_dir: &Path, team: &Team, plan: Plan) -> Result<Idle, HubError> {
        let sandbox = Sandbox::new("hark-bench-idle-", bin_dir)?;
        let url = team.server.url();
        let started = Instant::now();
        let mut figures = IdleFigures::default();
        let mut real = Vec::new();
        let wanted_real = plan.idle.min(plan.idle_processes);
        while real.len() < wanted_real {
            if let Some(mb) = mem_available_mb().filter(|&mb| mb < RESERVE_MB) {
                figures.memory_short_mb = Some(mb);
                break;
            }
            let batch = (wanted_real - real.len()).min(BATCH);
            let first = real.len();
            for agent in first..first + batch {
                real.push(spawn_real(&sandbox, &url, &team.agent_seeds[agent], agent)?);
            }
            for (agent, peer) in real.iter_mut().enumerate().skip(first) {
                peer.initialize(1, START_PATIENCE)
                    .map_err(|source| IdleError::Agent {
                        agent,
                        stderr: Tail::of_file("its", &agent_log(&sandbox, agent)),
                        source,
                    })?;
            }
        }
        figures.real = real.len();
        let seeds = &team.agent_seeds[real.len()..plan.idle];
        let emulated = if seeds.is_empty() {
            None
        } else {
            Some(emulate(&url, seeds, real.len(), plan.asks)?)
        };
        figures.emulated = seeds.len();
        figures.connect_ms = started.elapsed().as_secs_f64() * 1e3;
        figures.rss_idle_mb = rss_mb(&real);
        Ok(Idle {
            real,
            emulated,
            figures,
            sandbox,
        })
    }

    /// After the round: waits for the emulated watchers to have
    /// read every decision, reads the real agents' memory, and closes them.
    pub fn finish(&mut self) -> IdleFigures {
        let mut figures = std::mem::take(&mut self.figures);
        for agent in 0..self.real.len() {
            let said = std::fs::read_to_string(agent_log(&self.sandbox, agent)).unwrap_or_default();
            if let Some(line) = said.lines().find(|l| l.contains(REFUSED_WATCH)) {
                figures.watch_refused += 1;
                figures
                    .first_refusal
                    .get_or_insert_with(|| line.chars().take(300).collect());
            }
        }
        if let Some(emulated) = self.emulated.take() {
            figures.watch_refused += emulated.refused.len();
            if let Some(why) = emulated.refused.first() {
                figures.first_refusal.get_or_insert_with(|| why.clone());
            }
            let deadline = Instant::now() + DECISIONS_PATIENCE;
            let watching = emulated.seen.len() - emulated.refused.len();
            while figures.emulated_saw_all < watching {
                let left = deadline.saturating_duration_since(Instant::now());
                if emulated.saw_all.recv_timeout(left).is_err() {
                    break;
                }
                figures.emulated_saw_all += 1;
            }
            let least = emulated
                .seen
                .iter()
                .map(|n| n.load(Ordering::Relaxed))
                .min();
            figures.emulated_least_seen = least;
            emulated.runtime.shutdown_background();
        }
        figures.rss_after_mb = rss_mb(&self.real);
        figures.alive_after = self
            .real
            .iter()
            .filter(|p| status_kib(p.pid(), "VmRSS:").is_some())
            .count();
        figures.clean_exit = close_all(std::mem::take(&mut self.real));
        figures
    }
}

fn agent_log(sandbox: &Sandbox, agent: usize) -> PathBuf {
    sandbox.path(format!("idle-{agent}.stderr"))
}

/// Idle agent `agent`'s host name on the hub (its credential is made for
/// it: [`Team::start`]).
pub fn host(agent: usize) -> String {
    format!("idle-{agent}")
}

/// `hark mcp-operator-ask --hub` as agent-only host [`host`].
fn spawn_real(sandbox: &Sandbox, url: &str, seed: &str, agent: usize) -> Result<Peer, HubError> {
    let host = host(agent);
    let config = hub_config(sandbox, url, seed, &host, "ci", &format!("{host}.nk"))?;
    let config_path = sandbox.path(format!("{host}.toml"));
    write(&config_path, &config)?;
    let log = agent_log(sandbox, agent);
    let mut command = sandbox.hark(["mcp-operator-ask", "--hub"]);
    command
        .env("HARK_CONFIG", &config_path)
        .env("HARK_SESSION_ID", &host)
        .stderr(Stdio::from(log_file(&log).map_err(IdleError::from)?));
    Peer::spawn(&mut command).map_err(|source| {
        HubError::Idle(IdleError::Agent {
            agent,
            stderr: Tail::default(),
            source,
        })
    })
}

/// Connects an emulated agent per seed (numbered from `first`), each
/// watching the decisions bucket from its current values on, as a real one
/// does; each says on the channel when it has read `asks` decisions.
fn emulate(url: &str, seeds: &[String], first: usize, asks: usize) -> Result<Emulated, IdleError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(IdleError::Runtime)?;
    let (done, saw_all) = mpsc::channel();
    let seen: Vec<Arc<AtomicU64>> = seeds.iter().map(|_| Arc::default()).collect();
    let mut refused = Vec::new();
    runtime.block_on(async {
        for (i, seed) in seeds.iter().enumerate() {
            let agent = first + i;
            let client = async_nats::ConnectOptions::with_nkey(seed.clone())
                .name(format!("hark-bench emulated idle-{agent}"))
                .connect(url)
                .await
                .map_err(|source| IdleError::Connect { agent, source })?;
            let decisions = jetstream::new(client)
                .get_key_value(hark_hub::wire::DECISIONS)
                .await
                .map_err(|source| IdleError::Bucket { agent, source })?;
            match decisions.watch_with_history(">").await {
                Ok(watch) => {
                    tokio::spawn(count(watch, seen[i].clone(), asks as u64, done.clone()));
                }
                Err(e) => refused.push(format!("emulated idle-{agent}: {e}")),
            }
        }
        Ok::<(), IdleError>(())
    })?;
    Ok(Emulated {
        runtime,
        seen,
        saw_all,
        refused,
    })
}

/// Counts the puts a watch reads; says so once there are `all`.
async fn count(
    mut watch: async_nats::jetstream::kv::Watch,
    seen: Arc<AtomicU64>,
    all: u64,
    done: Sender<()>,
) {
    use async_nats::jetstream::kv::Operation;
    while let Some(entry) = watch.next().await {
        if matches!(entry, Ok(ref e) if e.operation == Operation::Put)
            && seen.fetch_add(1, Ordering::Relaxed) + 1 == all
        {
            let _ = done.send(());
        }
    }
}

/// The real agents' resident memory, in MB.
fn rss_mb(real: &[Peer]) -> Option<Summary> {
    let mb: Vec<f64> = real
        .iter()
        .filter_map(|p| status_kib(p.pid(), "VmRSS:"))
        .map(|kib| kib as f64 * 1024.0 / 1e6)
        .collect();
    Summary::of(&mb)
}

/// Closes every real agent's stdin, a few threads at a time; how many
/// exited cleanly.
fn close_all(real: Vec<Peer>) -> usize {
    let threads = 8;
    let mut chunks: Vec<Vec<Peer>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, peer) in real.into_iter().enumerate() {
        chunks[i % threads].push(peer);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .filter_map(|p| p.close(EXIT_PATIENCE).ok())
                        .filter(|f| f.status.success() && f.stdout_clean)
                        .count()
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).sum()
    })
}

/// The machine's `MemAvailable`, in MB.
fn mem_available_mb() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024 / 1_000_000)
}
