//! `hark mcp-studio`: an MCP stdio server (`hark`) for the operator's own
//! agent — Claude Code in a terminal, an editor — to dispatch agents and
//! answer them where the operator already looks (issue 15).
//!
//! `run` starts `hark run` (the same dispatcher, attached to the daemon the
//! app or `hark serve` runs) with its id known, follows the daemon's feed
//! for the items the run raises, and puts each question to the driving
//! client as an elicitation ([`crate::elicitation`]) when it advertises one;
//! the call stays one call. Otherwise the call returns `awaiting_operator` and the client
//! calls `answer`, which delivers the reply and goes on following the run.
//! Either way the run's result comes back when it ends. An item answered
//! elsewhere first (the desktop, `hark answer`) withdraws the elicitation,
//! and the run goes on.
//!
//! A write approval of a read-only run is elicited too, as its one
//! question (allow for the run, this action, the session, or deny; no free
//! text); declined, it is denied.
//!
//! With no daemon running, the studio serves one itself (a socket and a
//! store of its own), so it works on its own too.
//!
//! On 2026-07-28 the question goes out as an input-required result and the
//! client's retry of the call carries its answer ([`ask`]). A client that
//! declines or cancels quicker than a person could (the config's
//! `studio_reflex_ms`) has nobody to show the form to: from then on the
//! studio hands its questions over as `awaiting_operator`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ClientResult, ContentBlock, ElicitResult, ElicitationAction, InputResponses, ListToolsResult,
    PaginatedRequestParams, ServerConfig, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use hark_core::bridge::client::{self, Feed};
use hark_core::bridge::options::RunOptions;
use hark_core::bridge::socket::SocketFile;
use hark_core::bridge::views::{ItemState, ItemView};
use hark_core::bridge::wire::{ClientFrame, FeedEvent, ServerFrame, SocketSurface, WireReply};
use hark_core::config::OnTimeout;
use hark_core::model::ids::{Ids, ItemId, RunId};

use crate::error_text;

mod ask;
mod own;
mod tools;

use ask::{Caller, Prompt, Refused, Way};
use tools::AnswerParams;

/// The studio's server name.
pub const STUDIO_NAME: &str = "hark";

/// How the studio is set up.
#[derive(Debug, Clone)]
pub struct StudioSettings {
    /// The `hark` whose `run` dispatches the agents.
    pub hark: PathBuf,
    /// The daemon's socket the runs ask through.
    pub socket: PathBuf,
    /// An elicitation declined or cancelled quicker than this was seen by
    /// no person: the client has nobody to show it to (several cancel
    /// every elicitation in their headless modes). That question is handed
    /// over as `awaiting_operator`, and so is every later one.
    pub reflex: Duration,
}

/// One run the studio started.
#[derive(Debug)]
struct Run {
    id: RunId,
    session: String,
    /// The daemon it asks through.
    socket: PathBuf,
    child: tokio::process::Child,
    /// What `hark run` said on stderr (its last 4 KB), for a run that fails.
    stderr: tokio::task::JoinHandle<String>,
    feed: Feed,
    /// The item it waits on, handed to the client as `awaiting_operator`
    /// or an input-required result.
    waiting: Option<ItemView>,
    /// When the input-required result went out.
    asked: Option<Instant>,
    /// How it ended, once it has.
    ended: Option<Value>,
}

/// A run still going when the studio goes (its client hung up) is told to
/// end, as a stop signal would: `hark run` then stops its agent's whole
/// process group (a SIGKILL would leave the agent running).
impl Drop for Run {
    fn drop(&mut self) {
        if self.ended.is_none()
            && let Some(pid) = self.child.id()
        {
            hark_core::platform::ask_to_end(pid);
        }
    }
}

/// The server.
#[derive(Debug, Clone)]
pub struct Studio {
    settings: Arc<StudioSettings>,
    runs: Arc<std::sync::Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Run>>>>>,
    /// The daemon the studio serves itself when none was running: its
    /// socket (removed when the studio goes).
    own: Arc<tokio::sync::Mutex<Option<SocketFile>>>,
    /// The client declined an elicitation quicker than a person could:
    /// it is elicited no more.
    unseen: Arc<AtomicBool>,
}

fn text(value: Value) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value.to_string())])
}

impl Studio {
    pub fn new(settings: StudioSettings) -> Studio {
        Studio {
            settings: Arc::new(settings),
            runs: Arc::default(),
            own: Arc::default(),
            unseen: Arc::default(),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        crate::serve_stdio(self).await
    }

    /// Starts `hark run` with `options` (handed to it whole, as one JSON
    /// argument) and follows it.
    async fn run(&self, mut options: RunOptions, caller: &Caller) -> CallToolResponse {
        if options.prompt().trim().is_empty() {
            return error_text("run needs a prompt: {\"prompt\": \"…\"}").into();
        }
        // Every option is named: a new one does not compile until the
        // studio has said whether it takes it.
        let RunOptions {
            verb: _,
            cwd: _,
            session: _,
            timeout_secs: _,
            on_timeout: _,
            agent: _,
            agent_kind: _,
            wrap: _,
            read_only: _,
            no_confine: _,
            intake: _,
            answers: _,
            detach,
            hub,
            words: _,
        } = &options;
        if *detach {
            return error_text("run follows the run it starts: it cannot detach").into();
        }
        if hub.is_some() {
            return error_text("run asks through the operator's daemon, not a hub").into();
        }
        let socket = match self.socket().await {
            Ok(socket) => socket,
            Err(e) => return error_text(e.to_string()).into(),
        };
        let socket = &socket;
        // Following first: no item of the run can come before.
        let feed = match Feed::open(socket, &ClientFrame::Subscribe).await {
            Ok(feed) => feed,
            Err(e) => return error_text(format!("cannot follow the daemon: {e}")).into(),
        };
        let id = Ids::random().run();
        let session = options
            .session
            .get_or_insert_with(|| format!("studio-{}", id.short()))
            .clone();
        // The studio waits on the run: a question nobody answers in time
        // gets the not-answered error unless parking was asked for.
        options.on_timeout.get_or_insert(OnTimeout::Proceed);
        let json = match serde_json::to_string(&options) {
            Ok(json) => json,
            Err(e) => return error_text(format!("cannot send the run's options: {e}")).into(),
        };
        let mut command = tokio::process::Command::new(&self.settings.hark);
        command
            .args(["run", "--options-json", &json])
            .env(hark_core::env::SOCKET, socket)
            .env(hark_core::env::RUN_ID, id.to_string())
            .env(hark_core::env::STOP_WITH_PARENT, "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return error_text(format!(
                    "cannot start {}: {e}",
                    self.settings.hark.display()
                ))
                .into();
            }
        };
        let mut err = child.stderr.take();
        let stderr = tokio::spawn(async move {
            let mut said = String::new();
            if let Some(err) = err.as_mut() {
                let _ = err.read_to_string(&mut said).await;
            }
            let mut cut = said.len().saturating_sub(4096);
            while !said.is_char_boundary(cut) {
                cut += 1;
            }
            said.split_off(cut)
        });
        let run = Arc::new(tokio::sync::Mutex::new(Run {
            id,
            session,
            socket: socket.clone(),
            child,
            stderr,
            feed,
            waiting: None,
            asked: None,
            ended: None,
        }));
        self.runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), run.clone());
        let mut run = run.lock().await;
        self.follow(&mut run, caller).await
    }

    /// Follows `run` until it ends (its result) or waits on something the
    /// client is to answer (an input-required result, or
    /// `awaiting_operator`).
    async fn follow(&self, run: &mut Run, caller: &Caller) -> CallToolResponse {
        loop {
            tokio::select! {
                status = run.child.wait() => {
                    let code = status.ok().and_then(|s| s.code());
                    let ended = self.ended(run, code).await;
                    run.ended = Some(ended.clone());
                    return text(ended).into();
                }
                frame = run.feed.next() => match frame {
                    Ok(ServerFrame::Event { event: FeedEvent::Added | FeedEvent::Parked, item })
                        if item.run_id == Some(run.id) && item.state != ItemState::Settled =>
                    {
                        let way = caller.way().filter(|_| !self.unseen.load(Ordering::Relaxed));
                        let prompt = way.and_then(|way| Some((way, Prompt::of(&item, way.form())?)));
                        let response = match prompt {
                            Some((Way::Nested(_), prompt)) => {
                                if self.elicit(run, prompt, &caller.peer).await {
                                    continue;
                                }
                                text(awaiting(run, &item)).into()
                            }
                            Some((Way::InputRequired(_), prompt)) => {
                                run.asked = Some(Instant::now());
                                prompt.input_required().into()
                            }
                            None => text(awaiting(run, &item)).into(),
                        };
                        run.waiting = Some(*item);
                        return response;
                    }
                    Ok(_) => {}
                    Err(e) => return error_text(format!("the daemon's feed broke: {e}")).into(),
                },
            }
        }
    }

    /// Puts `prompt` to the client as an elicitation nested in the call and
    /// replies with what it said; `false` when that fails (the caller then
    /// hands the item over as `awaiting_operator`). An item answered
    /// elsewhere first withdraws the elicitation.
    async fn elicit(&self, run: &mut Run, prompt: Prompt<'_>, peer: &Peer<RoleServer>) -> bool {
        let id = prompt.item().id;
        let Ok(handle) = peer
            .send_request_with_option(
                ask::nested(prompt.params.clone()),
                PeerRequestOptions::no_options(),
            )
            .await
        else {
            return false;
        };
        let asked = Instant::now();
        let request_id = handle.id.clone();
        let answer = handle.await_response();
        tokio::pin!(answer);
        let said = loop {
            tokio::select! {
                said = &mut answer => break said,
                frame = run.feed.next() => match frame {
                    Ok(ServerFrame::Event { event: FeedEvent::Settled, item: settled }) if settled.id == id => {
                        let _ = peer
                            .notify_cancelled(CancelledNotificationParam::new(
                                Some(request_id),
                                Some("answered elsewhere".to_owned()),
                            ))
                            .await;
                        return true;
                    }
                    Ok(_) => {}
                    Err(_) => return false,
                },
            }
        };
        let Some(reply) = (match said {
            Ok(ClientResult::ElicitResult(said)) => self.heard(&prompt, &said, asked),
            _ => None,
        }) else {
            return false;
        };
        self.delivered(&run.socket, id, reply).await
    }

    /// Sends `reply`; `true` when it was taken, or another came first (the
    /// first reply stands and the run goes on).
    async fn delivered(&self, socket: &Path, id: ItemId, reply: WireReply) -> bool {
        match self.reply(socket, id, reply).await {
            Ok(()) => true,
            Err(refused) => refused.answered_elsewhere(),
        }
    }

    async fn reply(&self, socket: &Path, id: ItemId, reply: WireReply) -> Result<(), Refused> {
        match client::request(
            socket,
            &ClientFrame::Reply {
                id,
                reply,
                via: Some(SocketSurface::Studio),
            },
        )
        .await
        {
            Ok(ServerFrame::Replied { .. }) => Ok(()),
            Ok(ServerFrame::Error(e)) => Err(Refused::Daemon(e)),
            Ok(other) => Err(Refused::Unexpected(Box::new(other))),
            Err(e) => Err(Refused::Unreachable(e)),
        }
    }

    /// How `run` ended: its record in the daemon (result, cost), else what
    /// its `hark run` said.
    async fn ended(&self, run: &mut Run, code: Option<i32>) -> Value {
        let listed = client::request(
            &run.socket,
            &ClientFrame::ListRuns {
                limit: Some(100),
                offset: None,
            },
        )
        .await;
        let record = match listed {
            Ok(ServerFrame::Runs { runs, .. }) => runs.into_iter().find(|r| r.id == run.id),
            _ => None,
        };
        let said = (&mut run.stderr).await.unwrap_or_default();
        let status = if code == Some(0) {
            "finished"
        } else {
            "failed"
        };
        match record {
            Some(record) => json!({"status": status, "run_id": run.id, "session": run.session,
                "exit_code": record.exit_code.or(code), "result": record.result, "cost_usd": record.cost_usd}),
            None => json!({"status": status, "run_id": run.id, "session": run.session,
                "exit_code": code, "error": said.trim()}),
        }
    }

    async fn answer(&self, args: AnswerParams, caller: &Caller) -> CallToolResponse {
        match args.reply() {
            Ok((id, reply)) => self.settle(id, reply, self.waiting_on(id), caller).await,
            Err(e) => error_text(e.to_string()).into(),
        }
    }

    /// A 2026-07-28 client's retry of a call that returned an input-required
    /// result, with its response to the elicitation.
    async fn retry(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        caller: &Caller,
    ) -> CallToolResponse {
        let (id, said) = match ask::retried(state, responses) {
            Ok(retried) => retried,
            Err(e) => return error_text(e.to_string()).into(),
        };
        let Some(run) = self.waiting_on(id) else {
            return error_text(format!(
                "no run of this studio waits on {id} (see `runs`); nothing was answered"
            ))
            .into();
        };
        let (item, asked) = {
            let run = run.lock().await;
            (run.waiting.clone(), run.asked.unwrap_or_else(Instant::now))
        };
        let Some(item) = item else {
            return error_text(format!("no run of this studio waits on {id}")).into();
        };
        let reply = caller
            .way()
            .map(Way::form)
            .and_then(|form| Prompt::of(&item, form))
            .zip(said)
            .and_then(|(prompt, said)| self.heard(&prompt, &said, asked));
        match reply {
            Some(reply) => self.settle(id, reply, Some(run), caller).await,
            // What it said does not read as a reply: the fallback's result.
            None => text(awaiting(&*run.lock().await, &item)).into(),
        }
    }

    /// What the client said to the elicitation sent at `asked`, as the
    /// reply to send; `None`: hand the item over as `awaiting_operator`.
    /// A decline or cancel quicker than the reflex was nobody's: the client
    /// is elicited no more.
    fn heard(&self, prompt: &Prompt, said: &ElicitResult, asked: Instant) -> Option<WireReply> {
        if said.action != ElicitationAction::Accept && asked.elapsed() < self.settings.reflex {
            self.unseen.store(true, Ordering::Relaxed);
            return None;
        }
        prompt.reply(said)
    }

    /// The run of this studio that waits on item `id`.
    fn waiting_on(&self, id: ItemId) -> Option<Arc<tokio::sync::Mutex<Run>>> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.values()
            .find(|run| {
                run.try_lock()
                    .is_ok_and(|run| run.waiting.as_ref().is_some_and(|w| w.id == id))
            })
            .cloned()
    }

    /// Delivers `reply` to item `id` and, when `run` waits on it, follows
    /// the run on.
    async fn settle(
        &self,
        id: ItemId,
        reply: WireReply,
        run: Option<Arc<tokio::sync::Mutex<Run>>>,
        caller: &Caller,
    ) -> CallToolResponse {
        let socket = match &run {
            Some(run) => run.lock().await.socket.clone(),
            None => self.settings.socket.clone(),
        };
        let elsewhere = match (self.reply(&socket, id, reply).await, &run) {
            (Ok(()), _) => false,
            // The run goes on with the reply that came first.
            (Err(refused), Some(_)) if refused.answered_elsewhere() => true,
            (Err(refused), _) => return error_text(refused.to_string()).into(),
        };
        let Some(run) = run else {
            return text(json!({"status": "answered", "question_id": id})).into();
        };
        let mut run = run.lock().await;
        run.waiting = None;
        let mut followed = self.follow(&mut run, caller).await;
        if elsewhere && let CallToolResponse::Complete(result) = &mut followed {
            result.content.push(ContentBlock::text(format!(
                "question {id} was answered elsewhere first (the desktop or hark answer); \
                 your answer was not used"
            )));
        }
        followed
    }

    fn list(&self) -> CallToolResult {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let listed: Vec<Value> = runs
            .values()
            .map(|run| match run.try_lock() {
                Ok(run) => match (&run.ended, &run.waiting) {
                    (Some(ended), _) => ended.clone(),
                    (None, Some(item)) => awaiting(&run, item),
                    (None, None) => {
                        json!({"status": "running", "run_id": run.id, "session": run.session})
                    }
                },
                Err(_) => json!({"status": "running"}),
            })
            .collect();
        text(json!({"runs": listed}))
    }
}

/// The fallback's result: what the run waits on.
fn awaiting(run: &Run, item: &ItemView) -> Value {
    json!({"status": "awaiting_operator", "run_id": run.id, "session": run.session,
        "question_id": item.id, "asked_by": item.attribution.line,
        "questions": item.request.questions, "approval": item.approval})
}

impl ServerHandler for Studio {
    fn get_info(&self) -> ServerConfig {
        crate::tools_server(
            STUDIO_NAME,
            "Dispatch agents with `run`; their questions to the operator come to you (as elicitations, \
             or as awaiting_operator results you answer with `answer`).",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(Self::tools().list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Self::tools().get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = Caller::of(&context);
        if let Some(state) = &request.request_state {
            return Ok(self
                .retry(state, request.input_responses.as_ref(), &caller)
                .await);
        }
        if Self::tools().get(&request.name).is_none() {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}; this server has run, answer and runs",
                    request.name
                ),
                None,
            ));
        }
        Self::tools()
            .call(ToolCallContext::new(self, request, context))
            .await
    }
}
