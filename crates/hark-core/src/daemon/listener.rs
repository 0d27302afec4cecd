//! The listener: serves ask calls on a unix socket and puts them in
//! front of the operator through the [`OperatorPrompter`].
//!
//! [`OperatorPrompter`]: crate::prompter::OperatorPrompter
//!
//! Shaped `run(listener, daemon, shutdown)` like mini-redis, so a test binds
//! a socket in a temp dir and spawns the server. The same listener serves the
//! app's well-known socket and per-call sockets.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use tokio::io::BufReader;
use tokio::task::JoinSet;

use crate::bridge::deadline::{Deadlined, SocketReader};
use crate::bridge::socket::{SocketFile, peer_is_owner};
use crate::bridge::wire::{
    Caller, ClientFrame, ErrorCode, FrameError, ServerFrame, WireError, read_frame,
};
use crate::daemon::hosts::{HostName, HostSocketError, Origin};
use crate::daemon::peers::Watch;
use crate::daemon::waiting::{tell, wait_for_operator};
use crate::daemon::{gated, operator, parked};
use crate::model::item::{Outcome, SubAgent, Surface};
use crate::model::validate::validate;
use crate::platform::{self, Listener, Stream, WriteHalf};
use crate::registry::Registry;

pub use crate::daemon::state::{Daemon, Gate, MAX_TIMEOUT};

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

/// Serves connections until `shutdown` completes, then cancels every pending
/// item (each waiting agent gets its error at once) and drains.
pub async fn run(listener: Listener, daemon: Daemon, shutdown: impl Future<Output = ()>) {
    // The team's items (filed from the hub) are prompted as our own are.
    let mirrored = tokio::spawn(super::waiting::prompt_mirrored(daemon.clone()));
    let mut connections = accept(listener, &daemon, Origin::Local, shutdown).await;
    mirrored.abort();
    daemon.hosts.stop();
    daemon.registry.shutdown("hark is shutting down");
    drain(&mut connections).await;
}

/// Serves a host's socket until the daemon stops, then removes it.
async fn serve_host(listener: Listener, file: SocketFile, daemon: Daemon, host: HostName) {
    let stopped = daemon.hosts.stopped();
    let mut connections = accept(listener, &daemon, Origin::Host(host), stopped).await;
    drop(file);
    drain(&mut connections).await;
}

/// Gives the connections still served a moment to deliver their
/// cancellations.
async fn drain(connections: &mut JoinSet<Option<i32>>) {
    let _ = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

/// Accepts connections from `origin` until `stop` completes, serving each
/// on its own task; returns those still being served.
async fn accept(
    listener: Listener,
    daemon: &Daemon,
    origin: Origin,
    stop: impl Future<Output = ()>,
) -> JoinSet<Option<i32>> {
    let mut connections = JoinSet::new();
    let mut held = Held::default();
    let mut accept_failing = false;
    tokio::pin!(stop);
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
                    let origin = origin.clone();
                    connections.spawn(async move {
                        serve_connection(stream, daemon, origin).await;
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
            () = &mut stop => break,
        }
    }
    connections
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
    refuse(&mut writer, refusal).await;
    None
}

/// Serves one connection: a peer that is not the socket's owner, or whose
/// first frame is late, malformed or not its to make (an operator frame on a
/// host's socket, or from inside an agent), hears why and is hung up on; any
/// other has its frame served.
async fn serve_connection(stream: Stream, daemon: Daemon, origin: Origin) {
    if !matches!(peer_is_owner(&stream), Ok(true)) {
        let user = platform::peer_user(&stream).ok();
        tracing::warn!(?user, "refused a connection from another user");
        let (_, mut writer) = platform::split(stream);
        let refusal = WireError::new(ErrorCode::Forbidden, "this socket serves its owner only");
        return refuse(&mut writer, refusal).await;
    }
    let peer = platform::peer_pid(&stream);
    let (reader, mut writer) = platform::split(stream);
    let mut reader = BufReader::new(Deadlined::new(reader, FRAME_DEADLINE));
    let mut frame = match first_frame(&mut reader).await {
        Ok(Some(frame)) => frame,
        Ok(None) => return,
        Err(refusal) => return refuse(&mut writer, refusal).await,
    };
    if let Err(refusal) = from_origin(&mut frame, &origin) {
        tracing::warn!(host = ?origin.host(), "{}", refusal.message);
        return refuse(&mut writer, refusal).await;
    }
    // An asker is watched while its call is served; an operator frame from
    // inside an agent that is watched is refused.
    let asking = match daemon.agents.admit(peer, &frame) {
        Ok(asking) => asking,
        Err(refusal) => {
            tracing::warn!(?peer, "{refusal}");
            return refuse(&mut writer, refusal.into()).await;
        }
    };
    // Confined is the daemon's word, never the client's: only a run that
    // reported itself, confined, from the very process asking.
    if let Some(caller) = frame.caller_mut() {
        caller.asker.confined = daemon.agents.vouches(peer, caller.run_id.as_ref());
    }
    serve_frame(frame, &daemon, peer, asking, reader, writer).await;
}

/// Takes `frame` as `origin` may send it: the host it asked from is the
/// daemon's word, and a remote process id names nothing here; an operator
/// frame from a host's socket is refused.
fn from_origin(frame: &mut ClientFrame, origin: &Origin) -> Result<(), WireError> {
    if !origin.admits(frame) {
        let host = origin.host().map(HostName::as_str).unwrap_or_default();
        return Err(WireError::new(
            ErrorCode::Forbidden,
            format!(
                "this is {host}'s socket: it takes its agents' questions, not the operator's answers or listings; answer on the operator's machine"
            ),
        ));
    }
    if let Some(caller) = frame.caller_mut() {
        caller.asker.host = origin.host().map(ToString::to_string);
        if caller.asker.host.is_some() {
            caller.asker.pid = None;
        }
    }
    Ok(())
}

/// The connection's first frame; `Ok(None)` when the peer hung up (or its
/// connection failed) first, and the refusal to tell it when the frame came
/// late or unfinished, too large, or is not a hark frame.
async fn first_frame(reader: &mut SocketReader) -> Result<Option<ClientFrame>, WireError> {
    let mut buf = Vec::new();
    let first = match tokio::time::timeout(FIRST_FRAME, read_frame(reader, &mut buf)).await {
        Ok(read) if !matches!(read, Err(FrameError::Stalled(_))) => read,
        // Nothing whole in time, or a first frame begun and left unfinished.
        _ => {
            tracing::debug!("a connection sent no whole frame in time");
            return Err(WireError::new(
                ErrorCode::BadFrame,
                format!(
                    "no whole frame arrived within {} s of connecting",
                    FIRST_FRAME.as_secs()
                ),
            ));
        }
    };
    match first {
        Ok(true) => serde_json::from_slice::<ClientFrame>(&buf)
            .map(Some)
            .map_err(|e| WireError::new(ErrorCode::BadFrame, format!("not a hark frame: {e}"))),
        Ok(false) => Ok(None),
        Err(FrameError::TooLarge) => Err(WireError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the call exceeds the {} byte frame limit",
                crate::bridge::wire::MAX_FRAME
            ),
        )),
        Err(e) => {
            tracing::debug!("connection dropped: {e}");
            Ok(None)
        }
    }
}

/// Serves an admitted frame. An ask, an approval, an await and a
/// subscription hold the connection until they are done; every other frame
/// gets one answer. `asking` watches an asker while its call is served.
async fn serve_frame(
    frame: ClientFrame,
    daemon: &Daemon,
    peer: Option<i32>,
    asking: Option<Watch>,
    reader: SocketReader,
    mut writer: WriteHalf,
) {
    let answer = match frame {
        ClientFrame::Ask { caller, request } => {
            return ask(daemon, caller, &request, asking, reader, writer).await;
        }
        ClientFrame::Approve {
            caller,
            tool_name,
            input,
        } => return gated::approve(daemon, caller, &tool_name, &input, reader, writer).await,
        ClientFrame::Await {
            tool_use_id,
            session_id,
        } => return parked::await_settled(daemon, &tool_use_id, &session_id, writer).await,
        ClientFrame::Subscribe => {
            return daemon
                .agents
                .follow(&daemon.registry, peer, reader, writer)
                .await;
        }
        ClientFrame::Cancel | ClientFrame::AnsweredAtAgent => {
            ServerFrame::Error(WireError::new(ErrorCode::BadFrame, "nothing to cancel"))
        }
        // A reply on the socket is the command line's, or the studio's.
        ClientFrame::Reply { id, reply, via } => {
            operator::reply(
                &daemon.registry,
                id,
                reply,
                via.map_or(Surface::Cli, Surface::from),
            )
            .await
        }
        ClientFrame::List { filter } => operator::list(&daemon.registry, &filter),
        ClientFrame::Get { id } => operator::get(&daemon.registry, id),
        ClientFrame::ClearSettled => operator::clear_settled(&daemon.registry),
        ClientFrame::RanAtAgent {
            session_id,
            tool_name,
            input,
        } => gated::ran_at_agent(daemon, &session_id, &tool_name, &input),
        ClientFrame::SubAgent { caller, sub_agent } => {
            note_sub_agent(&daemon.registry, &caller, sub_agent)
        }
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
        ClientFrame::PairWeb => {
            operator::pair_web(&daemon.registry, daemon.web_url.get().map(String::as_str))
        }
        ClientFrame::ListDevices => operator::devices(&daemon.registry),
        ClientFrame::RevokeDevice { id } => operator::revoke_device(&daemon.registry, id),
        ClientFrame::Dispatch { request } => match daemon.dispatcher.start(request) {
            Ok(dispatched) => ServerFrame::Dispatched(dispatched),
            Err(e) => ServerFrame::Error(e.into()),
        },
        ClientFrame::HostSocket { host } => open_host(daemon, &host),
    };
    tell(&mut writer, &answer).await;
}

/// Serves an ask call: a malformed one is refused; the same tool use asking
/// again (the resumed agent's hook, then its call) is served the item it
/// asked, not a new one; else a new item waits on the operator, with the
/// asker watched until it settles.
async fn ask(
    daemon: &Daemon,
    caller: Caller,
    request: &Value,
    asking: Option<Watch>,
    reader: SocketReader,
    mut writer: WriteHalf,
) {
    let request = match validate(request, daemon.rules) {
        Ok(request) => request,
        Err(issues) => {
            let mut refusal = WireError::new(ErrorCode::Invalid, "the ask call is malformed");
            refusal.issues = issues;
            return refuse(&mut writer, refusal).await;
        }
    };
    if let Some(found) = parked::find(daemon, &caller) {
        return parked::serve_again(found, daemon, &caller, reader, writer).await;
    }
    let item = daemon.new_item(caller, request, None);
    let pending = daemon.registry.open(item);
    // Settled: the asker's tools may act as the operator again by the time
    // it hears the outcome.
    let stop_watching = move |_: &Outcome| drop(asking);
    wait_for_operator(pending, daemon, reader, writer, stop_watching).await;
}

/// Opens `host`'s socket, served until the daemon stops, or finds it open.
fn open_host(daemon: &Daemon, host: &str) -> ServerFrame {
    match daemon.hosts.open(host) {
        Ok(opened) => {
            if let Some((listener, file)) = opened.bound {
                tracing::info!(host = %opened.name, socket = %opened.path.display(), "serving a host's socket");
                tokio::spawn(serve_host(listener, file, daemon.clone(), opened.name));
            }
            ServerFrame::HostSocket { path: opened.path }
        }
        Err(HostSocketError::Name(e)) => {
            ServerFrame::Error(WireError::new(ErrorCode::Invalid, e.to_string()))
        }
        Err(HostSocketError::Socket(e)) => {
            ServerFrame::Error(WireError::new(ErrorCode::Unavailable, e.to_string()))
        }
    }
}

/// Notes the sub-agent `caller`'s tool call is made in, for the item that
/// call asks next.
fn note_sub_agent(registry: &Registry, caller: &Caller, sub_agent: SubAgent) -> ServerFrame {
    match &caller.tool_use_id {
        Some(tool_use_id) => {
            registry.note_sub_agent(tool_use_id, &caller.session(), sub_agent);
            ServerFrame::Recorded
        }
        None => ServerFrame::Error(WireError::new(
            ErrorCode::BadFrame,
            "sub_agent names the tool call it makes: tool_use_id",
        )),
    }
}

/// Tells the peer why it is refused; the connection ends after.
async fn refuse(writer: &mut WriteHalf, refusal: WireError) {
    tell(writer, &ServerFrame::Error(refusal)).await;
}
