//! Who may act as the operator: not an agent waiting on the operator, nor
//! any process running inside it.
//!
//! An agent's tools run as its children. Were they to send operator frames
//! (list the inbox, answer, approve), the agent could read the operator's
//! inbox and answer its own questions, or approve its own writes. So the
//! daemon watches the agents it knows of — each asker while its ask is
//! pending, each run while it lives (one it dispatched until it is reaped,
//! one that reported its start until it reports its end or is gone) — and
//! refuses every operator frame from a peer that is one of them or descends
//! from one.
//!
//! What is watched is what the daemon observes, not what a client says:
//! the ask connection's own process (its SO_PEERCRED pid) and, when the
//! client names it as the agent, that process's parent as the daemon reads
//! it (the agent that started its MCP server). A claimed pid that is not
//! the peer's parent is not watched, so no client can lock out a process
//! of its choosing. Each process is kept with its start time, so a pid
//! reused after it exits is not taken for it.
//!
//! On Windows a run's agent is told apart by membership instead: `hark run`
//! holds it in a named job object ([`crate::platform::job_name`]) that
//! nothing it starts can leave, and the daemon asks the system whether the
//! peer is in the job of a run it watches. A helper the agent detached
//! (`start /b`, a process whose parent exited: Windows keeps no tree for
//! orphans) is still in the job. The tree walk stays, as a second layer and
//! for the agents hark did not start.
//!
//! An ancestor of an agent (the operator's terminal that started it) is not
//! inside it; only its descendants are. The daemon's own process is never
//! refused (an in-process surface is the operator's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::bridge::deadline::SocketReader;
use crate::bridge::wire::{ClientFrame, ErrorCode, ServerFrame, WireError, write_frame};
use crate::daemon::ancestry::{self, Process};
use crate::daemon::operator;
use crate::model::ids::RunId;
use crate::platform::WriteHalf;
use crate::registry::Registry;

/// The agents the daemon watches; cheap to clone (all clones share them).
#[derive(Debug, Clone, Default)]
pub struct Agents {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    watched: Mutex<Watched>,
    /// Bumped whenever an agent is added, so a follower that subscribed
    /// before its agent asked is checked again (and cut off).
    added: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Watched {
    next: u64,
    agents: HashMap<u64, Agent>,
    /// The runs that reported their start (`hark run`), by id, until they
    /// report their end.
    runs: HashMap<RunId, Vec<u64>>,
    /// The runs whose `hark run` reported, from its own pid, that its agent
    /// is confined: that pid, until the run ends.
    confined: HashMap<RunId, u32>,
}

/// One watched agent.
#[derive(Debug, Clone)]
struct Agent {
    process: Process,
    name: String,
    why: Why,
    /// The job its agent is held in (Windows, a run's): whoever is in it is
    /// inside the agent.
    job: Option<String>,
}

/// Why an agent is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It is waiting on the operator.
    Asking,
    /// It is a run: one the daemon dispatched, or a `hark run` that
    /// reported its start.
    Run,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Why::Asking => "is waiting on the operator",
            Why::Run => "is a run in progress",
        })
    }
}

/// Why an operator frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "refused: this process runs inside agent pid {pid} ({name}), which {why}; an agent cannot answer its own questions"
    )]
    InsideAgent { pid: u32, name: String, why: Why },
    /// The check could not be made, so it fails closed.
    #[error(
        "refused: an agent {why}, and hark cannot tell whether this process runs inside it ({reason}); an agent cannot answer its own questions"
    )]
    Unknown { why: Why, reason: String },
}

impl From<Refusal> for WireError {
    fn from(refusal: Refusal) -> WireError {
        WireError::new(ErrorCode::InsideAgent, refusal.to_string())
    }
}

/// Keeps its agents watched until dropped.
#[derive(Debug)]
pub struct Watch {
    agents: Agents,
    keys: Vec<u64>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut watched = self.agents.lock();
        for key in &self.keys {
            watched.agents.remove(key);
        }
    }
}

/// Whether a frame acts as the operator. Asks, approvals and cancels are an
/// agent's; a run's reports of its own start and end are `hark run`'s.
pub fn is_operator(frame: &ClientFrame) -> bool {
    match frame {
        ClientFrame::Ask { .. }
        | ClientFrame::Approve { .. }
        | ClientFrame::Cancel
        | ClientFrame::AnsweredAtAgent
        | ClientFrame::RanAtAgent { .. }
        // The paused run waiting for its own agent's question: it learns
        // only the outcome its agent is about to get, of a tool use whose
        // id only the agent's host knows.
        | ClientFrame::Await { .. }
        // The host's word on which sub-agent makes a call, for display.
        | ClientFrame::SubAgent { .. }
        | ClientFrame::RunStarted { .. }
        | ClientFrame::RunFinished { .. } => false,
        ClientFrame::Reply { .. }
        | ClientFrame::List { .. }
        | ClientFrame::Get { .. }
        | ClientFrame::Status
        | ClientFrame::Subscribe
        | ClientFrame::ClearSettled
        | ClientFrame::Dispatch { .. }
        | ClientFrame::ListRuns { .. }
        | ClientFrame::ListSessions { .. }
        | ClientFrame::HostSocket { .. }
        | ClientFrame::PairWeb
        | ClientFrame::ListDevices
        | ClientFrame::RevokeDevice { .. } => true,
    }
}

impl Agents {
    fn lock(&self) -> std::sync::MutexGuard<'_, Watched> {
        // Nothing panics while holding it; a poisoned lock still holds a
        // consistent set.
        self.shared
            .watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits `frame` from `peer` (its SO_PEERCRED pid): refuses an
    /// operator frame from inside a watched agent, and watches the asker of
    /// an ask or approval for as long as the returned guard is kept.
    pub fn admit(&self, peer: Option<i32>, frame: &ClientFrame) -> Result<Option<Watch>, Refusal> {
        match frame {
            ClientFrame::Ask { caller, .. } | ClientFrame::Approve { caller, .. } => {
                Ok(Some(self.asking(peer, caller.asker.pid)))
            }
            // `hark run` reports its own pid: a report from another process
            // than the one it names watches nobody.
            ClientFrame::RunStarted { run } => {
                let reporter = peer.and_then(|p| u32::try_from(p).ok());
                if reporter == Some(run.pid) {
                    // The agents of runs that never reported their end go.
                    self.live();
                    let mut agents = self.run(reporter);
                    for agent in &mut agents {
                        agent.job = run_job(&run.id, run.pid);
                    }
                    let keys = self.add(agents);
                    let mut watched = self.lock();
                    watched.runs.insert(run.id, keys);
                    match run.confinement.as_ref().is_some_and(|c| c.is_confined()) {
                        true => watched.confined.insert(run.id, run.pid),
                        false => watched.confined.remove(&run.id),
                    };
                }
                Ok(None)
            }
            ClientFrame::RunFinished { run_id, .. } => {
                let mut watched = self.lock();
                watched.confined.remove(run_id);
                for key in watched.runs.remove(run_id).unwrap_or_default() {
                    watched.agents.remove(&key);
                }
                Ok(None)
            }
            frame if is_operator(frame) => self.check(peer).map(|()| None),
            _ => Ok(None),
        }
    }

    /// Whether an ask from `peer` filed under `run` comes from a confined
    /// agent: the run reported itself confined from that very process (its
    /// `hark run`, whose relay carries the agent's calls).
    pub fn vouches(&self, peer: Option<i32>, run: Option<&RunId>) -> bool {
        let (Some(peer), Some(run)) = (peer.and_then(|p| u32::try_from(p).ok()), run) else {
            return false;
        };
        self.lock().confined.get(run) == Some(&peer)
    }

    /// Watches the asker on a connection from `peer`: that process, and its
    /// parent when `claimed` (the client's word for the agent's pid) names
    /// it.
    pub fn asking(&self, peer: Option<i32>, claimed: Option<u32>) -> Watch {
        let Some(pid) = peer.and_then(|p| u32::try_from(p).ok()) else {
            tracing::warn!(
                "an asker's pid is unknown: operator frames from inside it are not refused"
            );
            return self.watch(Vec::new());
        };
        // The asker as read once: its own step names its parent.
        let step = ancestry::step(pid);
        let parent = match &step {
            Ok(step) => (claimed == Some(step.ppid)).then_some(step.ppid),
            Err(e) => {
                tracing::debug!("the asker's parent is unknown: {e}");
                None
            }
        };
        let asker = observed(pid, step, Why::Asking);
        let parent = parent.and_then(|ppid| observe(ppid, Why::Asking));
        self.watch(asker.into_iter().chain(parent).collect())
    }

    /// Watches a run the daemon started (its `hark run`, by pid) while the
    /// returned guard is kept.
    pub fn dispatched(&self, pid: Option<u32>) -> Watch {
        self.watch(self.run(pid))
    }

    /// A run's `hark run`, to watch.
    fn run(&self, pid: Option<u32>) -> Vec<Agent> {
        pid.and_then(|pid| observe(pid, Why::Run))
            .into_iter()
            .collect()
    }

    fn watch(&self, agents: Vec<Agent>) -> Watch {
        Watch {
            agents: self.clone(),
            keys: self.add(agents),
        }
    }

    /// Watches `agents`; their keys.
    fn add(&self, agents: Vec<Agent>) -> Vec<u64> {
        let mut keys = Vec::new();
        {
            let mut watched = self.lock();
            for agent in agents {
                let key = watched.next;
                watched.next += 1;
                watched.agents.insert(key, agent);
                keys.push(key);
            }
        }
        if !keys.is_empty() {
            self.shared.added.send_modify(|n| *n += 1);
        }
        keys
    }

    /// The agents watched, gone or not.
    fn watched(&self) -> Vec<Agent> {
        self.lock().agents.values().cloned().collect()
    }

    /// Stops watching the agents that are gone (a run that never reported
    /// its end); what is left.
    fn live(&self) -> Vec<Agent> {
        let watched: Vec<(u64, Agent)> = self
            .lock()
            .agents
            .iter()
            .map(|(key, agent)| (*key, agent.clone()))
            .collect();
        let (live, gone): (Vec<_>, Vec<_>) = watched.into_iter().partition(|(_, agent)| {
            ancestry::step(agent.process.pid).is_ok_and(|step| agent.process.is(&step.process))
        });
        if !gone.is_empty() {
            let mut watched = self.lock();
            for (key, _) in &gone {
                watched.agents.remove(key);
            }
            watched.runs.retain(|_, keys| {
                keys.retain(|key| watched_key(&gone, *key));
                !keys.is_empty()
            });
        }
        live.into_iter().map(|(_, agent)| agent).collect()
    }

    /// Notes each agent added from now on.
    pub fn added(&self) -> watch::Receiver<u64> {
        self.shared.added.subscribe()
    }

    /// Refuses `peer` when it is a watched agent or runs inside one; when
    /// agents are watched and its ancestry cannot be read, refuses it too.
    ///
    /// A process of the peer's ancestry is alive, so a watched agent it
    /// matches (pid and start time) is too: the agents' own liveness is
    /// read only where the answer depends on it (a job is asked about by
    /// name; a peer is refused for want of its ancestry only while some
    /// agent lives), not for every agent at every operator frame and every
    /// follower at every ask, which made a burst of asks quadratic.
    pub fn check(&self, peer: Option<i32>) -> Result<(), Refusal> {
        let mut agents = self.watched();
        if agents.is_empty() {
            return Ok(());
        }
        if agents.iter().any(|a| a.job.is_some()) {
            agents = self.live();
        }
        let unknown = |reason: String| match self.live().first() {
            Some(first) => Err(Refusal::Unknown {
                why: first.why,
                reason,
            }),
            None => Ok(()),
        };
        let Some(pid) = peer.and_then(|p| u32::try_from(p).ok()).filter(|&p| p != 0) else {
            return unknown("the system did not say which process connected".into());
        };
        if pid == std::process::id() {
            return Ok(());
        }
        for agent in &agents {
            let Some(job) = &agent.job else { continue };
            match in_job(pid, job) {
                Ok(false) => {}
                Ok(true) => {
                    return Err(Refusal::InsideAgent {
                        pid: agent.process.pid,
                        name: agent.name.clone(),
                        why: agent.why,
                    });
                }
                Err(e) => {
                    return unknown(format!("cannot ask whether it is in the job {job}: {e}"));
                }
            }
        }
        let steps = match ancestry::ancestry(pid) {
            Ok(steps) => steps,
            Err(e) => return unknown(e.to_string()),
        };
        for step in &steps {
            if let Some(agent) = agents.iter().find(|a| a.process.is(&step.process)) {
                return Err(Refusal::InsideAgent {
                    pid: agent.process.pid,
                    name: agent.name.clone(),
                    why: agent.why,
                });
            }
        }
        Ok(())
    }

    /// Streams the inbox to a follower until it hangs up, or until an agent it
    /// runs inside asks: it is checked again each time an agent is watched, and
    /// cut off — told why, and the feed ends — before that agent's item
    /// reaches it.
    pub async fn follow(
        &self,
        registry: &Registry,
        peer: Option<i32>,
        reader: SocketReader,
        mut writer: WriteHalf,
    ) {
        let mut added = self.added();
        let refusal = {
            let feed = operator::follow(registry, reader, &mut writer);
            tokio::pin!(feed);
            loop {
                tokio::select! {
                    biased;
                    Ok(()) = added.changed() => {
                        if let Err(refusal) = self.check(peer) {
                            break refusal;
                        }
                    }
                    () = &mut feed => return,
                }
            }
        };
        tracing::warn!(?peer, "a follower was cut off: {refusal}");
        // Told on the same connection once the feed is dropped. The feed was
        // not writing, unless a follower that stopped reading left it
        // halfway through a frame: that one gets a garbled end instead.
        let _ = write_frame(&mut writer, &ServerFrame::Error(refusal.into())).await;
    }
}

/// Whether `key` is not among `gone`.
fn watched_key(gone: &[(u64, Agent)], key: u64) -> bool {
    !gone.iter().any(|(k, _)| *k == key)
}

/// `pid` as the daemon sees it now, to watch; never the daemon itself.
fn observe(pid: u32, why: Why) -> Option<Agent> {
    observed(pid, ancestry::step(pid), why)
}

/// [`observe`], with `pid`'s step read already.
fn observed(
    pid: u32,
    step: Result<ancestry::Step, ancestry::AncestryError>,
    why: Why,
) -> Option<Agent> {
    if pid == std::process::id() || pid == 0 {
        return None;
    }
    match step {
        Ok(step) => Some(Agent {
            process: step.process,
            name: step.name,
            why,
            job: None,
        }),
        Err(e) => {
            // Gone already, or unreadable: watch the pid alone.
            tracing::debug!("watching pid {pid} without its start time: {e}");
            Some(Agent {
                process: Process { pid, started: None },
                name: "unknown".into(),
                why,
                job: None,
            })
        }
    }
}

/// The job a run's agent is held in: on Windows, named by the run and its
/// `hark run`'s pid; elsewhere there is none (the agent's confinement, or
/// its process group, holds it).
#[cfg(windows)]
fn run_job(run: &RunId, pid: u32) -> Option<String> {
    Some(crate::platform::job_name(&run.to_string(), pid))
}

#[cfg(not(windows))]
fn run_job(_run: &RunId, _pid: u32) -> Option<String> {
    None
}

#[cfg(windows)]
fn in_job(pid: u32, job: &str) -> std::io::Result<bool> {
    crate::platform::in_job(pid, job)
}

/// No job is named outside Windows.
#[cfg(not(windows))]
fn in_job(_pid: u32, _job: &str) -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
