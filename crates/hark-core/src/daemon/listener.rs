//! The listener: serves ask calls on a unix socket and puts them in
//! front of the operator through the [`OperatorPrompter`].
//!
//! Shaped `run(listener, daemon, shutdown)` like mini-redis, so a test binds
//! a socket in a temp dir and spawns the server. The same listener serves the
//! app's well-known socket and per-call sockets.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::task::JoinSet;

use crate::bridge::deadline::{Deadlined, SocketReader};
use crate::bridge::socket::peer_is_owner;
use crate::bridge::wire::{
    Caller, ClientFrame, ErrorCode, FrameError, ServerFrame, WireError, read_frame, write_frame,
};
use crate::config::Config;
use crate::daemon::dispatcher::Dispatcher;
use crate::daemon::peers::Agents;
use crate::daemon::{gated, operator, parked};
use crate::gate::grants::Grants;
use crate::gate::policy::Policy;
use crate::model::approval::Approval;
use crate::model::ids::{Clock, Ids};
use crate::model::item::{Item, Outcome, Parking, Surface};
use crate::model::resolve::Picks;
use crate::model::schema::AskRequest;
use crate::model::validate::{Rules, validate};
use crate::platform::{self, Listener, Stream, WriteHalf};
use crate::prompter::{OperatorPrompter, Unanswered};
use crate::registry::{Pending, Registry, Reply, Waited};

/// The longest wait a call may ask for (a day).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);
/// The pause before accepting again after `accept` failed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long a shutting-down listener waits for connections to deliver their
/// cancellations.
const DRAIN: Duration = Duration::from_secs(2);
/// How long a connection has to send its first frame whole. Every client
/// sends it as soon as it connects, so one that has not is stuck or hostile:
/// it would hold a file handle (and up to a frame's worth of buffer) forever.
pub const FIRST_FRAME: Duration = Duration::from_secs(10);
/// How long any frame has to arrive whole once its first byte has: a client
/// writes a frame at once, so one still unfinished after this is stuck or
/// hostile, and would hold its file handle and up to [`MAX_FRAME`] of buffer
/// forever. Between frames a connection may idle as long as it likes (an
/// operator following the inbox, an asker waiting for its answer).
///
/// [`MAX_FRAME`]: crate::bridge::wire::MAX_FRAME
pub const FRAME_DEADLINE: Duration = Duration::from_secs(10);
/// How many connections one process may hold at once: enough for a client
/// asking many questions in parallel, too few for one process to take every
/// file handle the daemon has.
pub const PER_PROCESS: usize = 256;

/// What a listener needs to serve calls.
#[derive(Clone)]
pub struct Daemon {
    pub registry: Registry,
    pub prompter: Arc<dyn OperatorPrompter>,
    /// The wait when a call names none.
    pub default_timeout: Duration,
    pub rules: Rules,
    /// The write-mode gate's policy and the grants given so far.
    pub gate: Arc<Gate>,
    /// Starts the runs the operator dispatches through this daemon.
    pub dispatcher: Dispatcher,
    /// Where new items' ids come from.
    pub ids: Ids,
    /// What new items are stamped with.
    pub clock: Clock,
    /// The agents waiting on the operator and the runs it dispatched: no
    /// operator frame is taken from inside one (shared with the dispatcher).
    pub agents: Agents,
}

/// The write-mode gate, as the daemon keeps it.
#[derive(Debug, Default)]
pub struct Gate {
    pub policy: Policy,
    pub grants: Grants,
}

impl Gate {
    pub fn new(policy: Policy) -> Gate {
        Gate {
            policy,
            grants: Grants::default(),
        }
    }
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("default_timeout", &self.default_timeout)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

/// Serves connections until `shutdown` completes, then cancels every pending
/// item (each waiting agent gets its error at once) and drains.
pub async fn run(listener: Listener, daemon: Daemon, shutdown: impl Future<Output = ()>) {
    let mut connections = JoinSet::new();
    let mut held = Held::default();
    let mut accept_failing = false;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = platform::accept(&listener) => match accepted {
                Ok(stream) => {
                    accept_failing = false;
                    let pid = platform::peer_pid(&stream);
                    if !held.take(pid) {
                        tracing::warn!(?pid, "refused a connection: the process holds {PER_PROCESS} already");
                        connections.spawn(refuse_crowd(stream));
                        continue;
                    }
                    let daemon = daemon.clone();
                    connections.spawn(async move {
                        serve_connection(stream, daemon).await;
                        pid
                    });
                }
                Err(e) => {
                    // Out of file handles (or similar): every retry would fail
                    // at once, so back off instead of spinning, and say it once.
                    if !accept_failing {
                        tracing::warn!("cannot accept connections: {e}; retrying every {} ms", ACCEPT_BACKOFF.as_millis());
                    }
                    accept_failing = true;
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            Some(ended) = connections.join_next(), if !connections.is_empty() => {
                if let Ok(pid) = ended {
                    held.give_back(pid);
                }
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    daemon.registry.shutdown("hark is shutting down");
    let _ = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

/// The connections each process holds, by pid (a peer whose pid the
/// platform does not tell is not counted).
#[derive(Debug, Default)]
struct Held(HashMap<i32, usize>);

impl Held {
    /// Counts one more connection of `pid`; false when it holds too many.
    fn take(&mut self, pid: Option<i32>) -> bool {
        let Some(pid) = pid else { return true };
        let count = self.0.entry(pid).or_default();
        if *count >= PER_PROCESS {
            return false;
        }
        *count += 1;
        true
    }

    fn give_back(&mut self, pid: Option<i32>) {
        if let Some(pid) = pid
            && let Some(count) = self.0.get_mut(&pid)
        {
            *count -= 1;
            if *count == 0 {
                self.0.remove(&pid);
            }
        }
    }
}

/// Tells a process over its connection limit why, and hangs up.
async fn refuse_crowd(stream: Stream) -> Option<i32> {
    let (_, mut writer) = platform::split(stream);
    let refusal = WireError::new(
        ErrorCode::Unavailable,
        format!("this process holds {PER_PROCESS} connections to hark already; close some first"),
    );
    let _ = write_frame(&mut writer, &ServerFrame::Error(refusal)).await;
    None
}

async fn serve_connection(stream: Stream, daemon: Daemon) {
    match peer_is_owner(&stream) {
        Ok(true) => {}
        Ok(false) | Err(_) => {
            let user = platform::peer_user(&stream).ok();
            tracing::warn!(?user, "refused a connection from another user");
            let (_, mut writer) = platform::split(stream);
            let refusal = WireError::new(ErrorCode::Forbidden, "this socket serves its owner only");
            let _ = write_frame(&mut writer, &ServerFrame::Error(refusal)).await;
            return;
        }
    }
    let peer = platform::peer_pid(&stream);
    let (reader, mut writer) = platform::split(stream);
    let mut reader = BufReader::new(Deadlined::new(reader, FRAME_DEADLINE));
    let mut buf = Vec::new();
    let first = match tokio::time::timeout(FIRST_FRAME, read_frame(&mut reader, &mut buf)).await {
        Ok(read) if !matches!(read, Err(FrameError::Stalled(_))) => read,
        // Nothing whole in time, or a first frame begun and left unfinished.
        _ => {
            tracing::debug!("a connection sent no whole frame in time");
            let late = WireError::new(
                ErrorCode::BadFrame,
                format!(
                    "no whole frame arrived within {} s of connecting",
                    FIRST_FRAME.as_secs()
                ),
            );
            let _ = write_frame(&mut writer, &ServerFrame::Error(late)).await;
            return;
        }
    };
    let frame = match first {
        Ok(true) => serde_json::from_slice::<ClientFrame>(&buf)
            .map_err(|e| WireError::new(ErrorCode::BadFrame, format!("not a hark frame: {e}"))),
        Ok(false) => return,
        Err(FrameError::TooLarge) => Err(WireError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the call exceeds the {} byte frame limit",
                crate::bridge::wire::MAX_FRAME
            ),
        )),
        Err(e) => {
            tracing::debug!("connection dropped: {e}");
            return;
        }
    };
    let frame = match frame {
        Ok(frame) => frame,
        Err(refusal) => {
            let _ = write_frame(&mut writer, &ServerFrame::Error(refusal)).await;
            return;
        }
    };
    // An asker is watched while its call is served; an operator frame from
    // inside an agent that is watched is refused.
    let asking = match daemon.agents.admit(peer, &frame) {
        Ok(asking) => asking,
        Err(refusal) => {
            tracing::warn!(?peer, "{refusal}");
            let _ = write_frame(&mut writer, &ServerFrame::Error(refusal.into())).await;
            return;
        }
    };
    // Confined is the daemon's word, never the client's: only a run that
    // reported itself, confined, from the very process asking.
    let mut frame = frame;
    if let Some(caller) = frame.caller_mut() {
        caller.asker.confined = daemon.agents.vouches(peer, caller.run_id.as_ref());
    }
    let answer = match frame {
        ClientFrame::Ask { caller, request } => match validate(&request, daemon.rules) {
            Ok(request) => {
                // The same tool use again (the resumed agent's hook, then its
                // call): the item it asked, not a new one.
                if let Some(found) = parked::find(&daemon, &caller) {
                    return parked::serve_again(found, &daemon, &caller, reader, writer).await;
                }
                let item = daemon.new_item(caller, request, None);
                let pending = daemon.registry.open(item);
                // Settled: the asker's tools may act as the operator again
                // by the time it hears the outcome.
                let stop_watching = move |_: &Outcome| drop(asking);
                wait_for_operator(pending, &daemon, reader, writer, stop_watching).await;
                return;
            }
            Err(issues) => {
                let mut refusal = WireError::new(ErrorCode::Invalid, "the ask call is malformed");
                refusal.issues = issues;
                ServerFrame::Error(refusal)
            }
        },
        ClientFrame::Approve {
            caller,
            tool_name,
            input,
        } => return gated::approve(&daemon, caller, &tool_name, &input, reader, writer).await,
        ClientFrame::Cancel => {
            ServerFrame::Error(WireError::new(ErrorCode::BadFrame, "nothing to cancel"))
        }
        ClientFrame::Await {
            tool_use_id,
            session_id,
        } => {
            return parked::await_settled(&daemon, &tool_use_id, &session_id, writer).await;
        }
        ClientFrame::Subscribe => {
            return daemon
                .agents
                .follow(&daemon.registry, peer, reader, writer)
                .await;
        }
        // A reply on the socket is the command line's, or the studio's.
        ClientFrame::Reply { id, reply, via } => operator::reply(
            &daemon.registry,
            id,
            reply,
            via.map_or(Surface::Cli, Surface::from),
        ),
        ClientFrame::List { filter } => operator::list(&daemon.registry, &filter),
        ClientFrame::Get { id } => operator::get(&daemon.registry, id),
        ClientFrame::ClearSettled => operator::clear_settled(&daemon.registry),
        ClientFrame::SubAgent { caller, sub_agent } => match &caller.tool_use_id {
            Some(tool_use_id) => {
                let session = caller.session();
                daemon
                    .registry
                    .note_sub_agent(tool_use_id, &session, sub_agent);
                ServerFrame::Recorded
            }
            None => ServerFrame::Error(WireError::new(
                ErrorCode::BadFrame,
                "sub_agent names the tool call it makes: tool_use_id",
            )),
        },
        run @ (ClientFrame::RunStarted { .. } | ClientFrame::RunFinished { .. }) => {
            operator::record_run(&daemon.registry, run)
        }
        ClientFrame::ListRuns { limit, offset } => operator::runs(&daemon.registry, limit, offset),
        ClientFrame::ListSessions { limit, offset } => {
            operator::sessions(&daemon.registry, limit, offset)
        }
        ClientFrame::Status => ServerFrame::Status {
            store: daemon.registry.store_health(),
        },
        ClientFrame::Dispatch { request } => match daemon.dispatcher.start(request) {
            Ok(dispatched) => ServerFrame::Dispatched(dispatched),
            Err(e) => ServerFrame::Error(e.into()),
        },
    };
    let _ = write_frame(&mut writer, &answer).await;
}

impl Daemon {
    /// A daemon with `registry` that puts items to `prompter`, set as
    /// `config` says: its bounded wait, its rules, its write policy and how
    /// many run logs it keeps. The runs it dispatches report to `socket` and
    /// log under `logs`. New ids are random and items are stamped with the
    /// system clock.
    pub fn new(
        registry: Registry,
        prompter: Arc<dyn OperatorPrompter>,
        config: &Config,
        socket: PathBuf,
        logs: PathBuf,
    ) -> Daemon {
        let agents = Agents::default();
        Daemon {
            dispatcher: Dispatcher {
                hark: Dispatcher::sibling_hark(),
                socket,
                logs,
                registry: registry.clone(),
                own_env: Vec::new(),
                log_limit: config.run_log_limit,
                ids: Ids::random(),
                agents: agents.clone(),
            },
            agents,
            registry,
            prompter,
            default_timeout: config.ask_timeout(),
            rules: config.rules(),
            gate: Arc::new(Gate::new(config.approvals.clone())),
            ids: Ids::random(),
            clock: Clock::system(),
        }
    }

    /// A new pending item for `caller`'s request.
    pub(super) fn new_item(
        &self,
        caller: Caller,
        request: AskRequest,
        approval: Option<Approval>,
    ) -> Item {
        let session_id = caller.session();
        let mut asker = caller.asker;
        if let Some(tool_use_id) = &caller.tool_use_id {
            asker.sub_agent = self.registry.take_sub_agent(tool_use_id, &session_id);
        }
        Item {
            id: self.ids.item(),
            session_id,
            run_id: caller.run_id,
            asker,
            request,
            approval,
            created_at: self.clock.now(),
            timeout: effective_timeout(caller.timeout_secs, self.default_timeout),
            parking: caller
                .tool_use_id
                .map(|tool_use_id| Parking {
                    tool_use_id,
                    parked_at: None,
                    transcript: caller.transcript,
                })
                .filter(|_| caller.parks),
        }
    }
}

/// The call's wait: its own when valid, else the default; never above [`MAX_TIMEOUT`].
pub(super) fn effective_timeout(requested: Option<f64>, default: Duration) -> Duration {
    requested
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s.min(MAX_TIMEOUT.as_secs_f64())))
        .unwrap_or(default)
}

/// Races the prompter, the registry (timeouts, other surfaces) and the peer
/// (cancel or hang-up) until the item settles, then reports the outcome
/// (and returns it; `None` when the peer hung up first). `before_telling`
/// takes the outcome before the peer is told.
pub(super) async fn wait_for_operator(
    mut pending: Pending,
    daemon: &Daemon,
    mut reader: SocketReader,
    mut writer: WriteHalf,
    before_telling: impl FnOnce(&Outcome),
) -> Option<Outcome> {
    let id = pending.item.id;
    let accepted = ServerFrame::Accepted {
        id,
        timeout_ms: u64::try_from(pending.item.timeout.as_millis()).unwrap_or(u64::MAX),
    };
    if write_frame(&mut writer, &accepted).await.is_err() {
        return None; // dropping `pending` cancels the item
    }
    let mut prompt = daemon
        .prompter
        .ask(&pending.item.session_id, pending.item.clone());
    let mut prompting = true;
    let mut buf = Vec::new();
    let outcome = loop {
        tokio::select! {
            waited = pending.wait() => match waited {
                Waited::Settled(outcome) => break outcome,
                Waited::Parked => {
                    let _ = write_frame(&mut writer, &ServerFrame::Parked { id }).await;
                    if prompting {
                        parked::keep_prompting(daemon, pending.item.clone(), prompt);
                    }
                    return None;
                }
            },
            answered = &mut prompt, if prompting => {
                prompting = false;
                apply(&daemon.registry, daemon.prompter.surface(), &pending.item, answered);
            }
            frame = read_frame(&mut reader, &mut buf) => match frame {
                Ok(true) if serde_json::from_slice::<ClientFrame>(&buf).ok() == Some(ClientFrame::Cancel) => {
                    daemon.registry.cancel(id, "the agent cancelled the call");
                }
                Ok(true) => {}
                // A frame left unfinished: the asker is stuck, so its item
                // is cancelled now rather than left to its timeout.
                Err(FrameError::Stalled(stalled)) => {
                    daemon.registry.cancel(id, &format!("the agent's connection stalled: {stalled}"));
                    return None;
                }
                // Hang-up: nobody is listening any more.
                Ok(false) | Err(_) => return None,
            },
        }
    };
    // What the outcome grants holds before the asker hears of it: its next
    // call may come at once.
    before_telling(&outcome);
    let settled = ServerFrame::Settled {
        id,
        outcome: outcome.clone(),
    };
    let _ = write_frame(&mut writer, &settled).await;
    Some(outcome)
}

/// Hands what the prompter returned to the registry, which resolves it.
pub(super) fn apply(
    registry: &Registry,
    surface: Surface,
    item: &Item,
    answered: Result<Picks, Unanswered>,
) {
    let id = item.id;
    let result = match answered {
        Ok(picks) => match Reply::from_picks(item, picks) {
            Some(reply) => registry.reply(id, reply, surface).map(|_| ()),
            None => {
                tracing::warn!(question_id = %id, "the prompter picked no verdict for the approval");
                Ok(())
            }
        },
        Err(Unanswered::Skipped) if item.approval.is_some() => {
            registry.reply(id, Reply::Deny, surface).map(|_| ())
        }
        Err(Unanswered::Skipped) => registry.reply(id, Reply::Skip, surface).map(|_| ()),
        Err(Unanswered::Cancelled(reason)) => {
            registry.cancel(id, &reason);
            Ok(())
        }
        Err(Unanswered::NoOperator) => {
            registry.settle_as(id, Outcome::NoOperator);
            Ok(())
        }
    };
    if let Err(e) = result {
        // The item stays pending: another surface may still answer, or it times out.
        tracing::warn!(question_id = %id, "the prompter's reply was refused: {e}");
    }
}
