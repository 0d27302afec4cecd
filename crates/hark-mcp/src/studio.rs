//! `hark mcp-studio`: an MCP stdio server (`hark`) for the operator's own
//! agent — Claude Code in a terminal, an editor — to dispatch agents and
//! answer them where the operator already looks (issue 15).
//!
//! `run` starts `hark run` (the same dispatcher, attached to the daemon the
//! app or `hark serve` runs) with its id known, follows the daemon's feed
//! for the items the run raises, and puts each question to the driving
//! client as an elicitation ([`crate::elicitation`]) when it advertises one
//! and negotiated a revision that lets a server ask; the call stays one
//! call. Otherwise the call returns `awaiting_operator` and the client
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
//! Not yet: 2026-07-28's input-required results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ClientResult, ContentBlock, ElicitRequestParams, ElicitationAction, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, Request, ServerCapabilities, ServerConfig,
    ServerRequest, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;

use hark_core::bridge::client::{self, Feed};
use hark_core::bridge::socket::SocketFile;
use hark_core::bridge::views::{ItemState, ItemView};
use hark_core::bridge::wire::{
    ClientFrame, ErrorCode, FeedEvent, ServerFrame, SocketSurface, WireError, WireReply,
};
use hark_core::model::approval::Scope;
use hark_core::model::ids::{Ids, ItemId, RunId};

use crate::elicitation::{self, Form};
use crate::error_text;

mod own;

/// The studio's server name.
pub const STUDIO_NAME: &str = "hark";

/// How the studio is set up.
#[derive(Debug, Clone)]
pub struct StudioSettings {
    /// The `hark` whose `run` dispatches the agents.
    pub hark: PathBuf,
    /// The daemon's socket the runs ask through.
    pub socket: PathBuf,
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
    /// The item it waits on, handed to the client as `awaiting_operator`.
    waiting: Option<ItemView>,
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
            hark_core::files::ask_to_end(pid);
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
        }
    }

    /// Serves MCP on stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        crate::serve_stdio(self).await
    }

    fn tools() -> Vec<Tool> {
        let object = |value: Value| match value {
            Value::Object(map) => Arc::new(map),
            _ => unreachable!("a schema is an object"),
        };
        vec![
            Tool::new(
                "run",
                "Dispatch an agent (hark run: Claude Code or Codex) to do PROMPT, attached to the operator. \
                 Its questions are put to you as elicitations when you support them; otherwise this returns \
                 {\"status\":\"awaiting_operator\",\"run_id\",\"question_id\",\"questions\"} and you answer with \
                 the `answer` tool. Returns the run's result, exit code and cost when it ends.",
                object(
                    json!({"type": "object", "required": ["prompt"], "properties": {
                        "prompt": {"type": "string", "description": "What the agent is to do"},
                        "cwd": {"type": "string", "description": "Its working directory (absolute)"},
                        "verb": {"type": "string", "enum": ["task", "ask", "decide"]},
                        "session": {"type": "string", "description": "The session its questions are filed under"},
                        "read_only": {"type": "boolean", "description": "Every write asks the operator first"},
                        "timeout_secs": {"type": "number", "description": "Seconds the operator has for each question"}
                    }}),
                ),
            ),
            Tool::new(
                "answer",
                "Answer what a run awaits (the question_id of an awaiting_operator result): answers maps each \
                 question's text to an option label, a list of labels, or {\"text\": \"…\"}; questions left out \
                 take their defaults. Or skip it, or give an approval's verdict. Then follows the run: returns its \
                 result, or the next awaiting_operator.",
                object(
                    json!({"type": "object", "required": ["question_id"], "properties": {
                        "question_id": {"type": "string"},
                        "answers": {"type": "object"},
                        "skip": {"type": "boolean"},
                        "verdict": {"type": "string", "enum": ["allow", "deny"]},
                        "scope": {"type": "string", "enum": ["turn", "action", "session"]}
                    }}),
                ),
            ),
            Tool::new(
                "runs",
                "The runs this studio started, and what each waits on.",
                object(json!({"type": "object", "properties": {}})),
            ),
        ]
    }

    async fn run(&self, args: &Map<String, Value>, peer: &Peer<RoleServer>) -> CallToolResult {
        let Some(prompt) = args
            .get("prompt")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
        else {
            return error_text("run needs a prompt: {\"prompt\": \"…\"}");
        };
        let socket = match self.socket().await {
            Ok(socket) => socket,
            Err(e) => return error_text(e),
        };
        let socket = &socket;
        // Following first: no item of the run can come before.
        let feed = match Feed::open(socket, &ClientFrame::Subscribe).await {
            Ok(feed) => feed,
            Err(e) => return error_text(format!("cannot follow the daemon: {e}")),
        };
        let id = Ids::random().run();
        let session = args
            .get("session")
            .and_then(Value::as_str)
            .map_or_else(|| format!("studio-{}", id.short()), str::to_owned);
        let mut command = tokio::process::Command::new(&self.settings.hark);
        command.args(["run", "--session", &session]);
        if let Some(cwd) = args.get("cwd").and_then(Value::as_str) {
            command.args(["--cwd", cwd]);
        }
        if let Some(verb) = args.get("verb").and_then(Value::as_str) {
            command.args(["--verb", verb]);
        }
        if args.get("read_only") == Some(&Value::Bool(true)) {
            command.arg("--read-only");
        }
        if let Some(secs) = args.get("timeout_secs").and_then(Value::as_f64) {
            command.args(["--timeout", &secs.to_string()]);
        }
        command
            .args(["--on-timeout", "proceed", "--", prompt])
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
                ));
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
            ended: None,
        }));
        self.runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), run.clone());
        let mut run = run.lock().await;
        self.follow(&mut run, peer).await
    }

    /// Follows `run` until it ends (its result) or waits on something the
    /// client is to answer (`awaiting_operator`).
    async fn follow(&self, run: &mut Run, peer: &Peer<RoleServer>) -> CallToolResult {
        loop {
            tokio::select! {
                status = run.child.wait() => {
                    let code = status.ok().and_then(|s| s.code());
                    let ended = self.ended(run, code).await;
                    run.ended = Some(ended.clone());
                    return text(ended);
                }
                frame = run.feed.next() => match frame {
                    Ok(ServerFrame::Event { event: FeedEvent::Added | FeedEvent::Parked, item })
                        if item.run_id == Some(run.id) && item.state != ItemState::Settled =>
                    {
                        if self.elicit(run, &item, peer).await {
                            continue;
                        }
                        let awaiting = awaiting(run, &item);
                        run.waiting = Some(*item);
                        return text(awaiting);
                    }
                    Ok(_) => {}
                    Err(e) => return error_text(format!("the daemon's feed broke: {e}")),
                },
            }
        }
    }

    /// Puts `item` to the client as an elicitation and replies with what it
    /// said; `false` when it cannot be asked that way (no capability, a
    /// revision that forbids a server's requests, an approval, content that
    /// does not fit), so the caller hands it over as `awaiting_operator`.
    async fn elicit(&self, run: &mut Run, item: &ItemView, peer: &Peer<RoleServer>) -> bool {
        let Some(info) = peer.peer_info() else {
            return false;
        };
        let version = &info.protocol_version;
        let form = match Form::for_version(version) {
            Some(form) if info.capabilities.elicitation.is_some() => form,
            _ => return false,
        };
        // 2026-07-28 carries the request as an input-required result, which
        // the studio does not send yet.
        if version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            return false;
        }
        let questions = &item.request.questions;
        // A write approval is its one question, with no free text.
        let approval = item.approval.is_some();
        let mut form_json = elicitation::schema_json(questions, form);
        if approval && let Some(properties) = form_json["properties"].as_object_mut() {
            properties.retain(|key, _| !key.ends_with("_other"));
        }
        let Ok(schema) = serde_json::from_value(form_json) else {
            return false;
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: elicitation::message(&item.attribution.line, questions),
            requested_schema: schema,
        };
        let request = ServerRequest::ElicitRequest(Request::new(params));
        let Ok(handle) = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        else {
            return false;
        };
        let request_id = handle.id.clone();
        let answer = handle.await_response();
        tokio::pin!(answer);
        let said = loop {
            tokio::select! {
                said = &mut answer => break said,
                frame = run.feed.next() => match frame {
                    // Answered elsewhere first: the elicitation is withdrawn.
                    Ok(ServerFrame::Event { event: FeedEvent::Settled, item: settled }) if settled.id == item.id => {
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
        let reply = match said {
            Ok(ClientResult::ElicitResult(result)) => match result.action {
                ElicitationAction::Accept => {
                    let content = match result.content {
                        Some(Value::Object(content)) => content,
                        _ => Map::new(),
                    };
                    match elicitation::picks(questions, form, &content) {
                        Ok(answers) if approval => match verdict(&answers) {
                            Some(reply) => reply,
                            None => return false,
                        },
                        Ok(answers) => WireReply::Answer {
                            answers,
                            notes: Default::default(),
                        },
                        Err(_) => return false,
                    }
                }
                // Silence is never consent: a declined approval is denied.
                _ if approval => WireReply::Deny,
                _ => WireReply::Skip,
            },
            _ => return false,
        };
        match self.reply(&run.socket, item.id, reply).await {
            Ok(()) => true,
            // Answered elsewhere between the client's reply and ours: the
            // first reply stands and the run goes on.
            Err(refused) if refused.answered_elsewhere() => true,
            Err(_) => false,
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
            Ok(other) => Err(Refused::Other(format!("the daemon answered {other:?}"))),
            Err(e) => Err(Refused::Other(e.to_string())),
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

    async fn answer(&self, args: &Map<String, Value>, peer: &Peer<RoleServer>) -> CallToolResult {
        let Some(question_id) = args.get("question_id").and_then(Value::as_str) else {
            return error_text("answer needs the question_id of an awaiting_operator result");
        };
        let Ok(id) = question_id.parse::<uuid::Uuid>().map(ItemId) else {
            return error_text(format!("{question_id:?} is not a question id"));
        };
        let reply = match (
            args.get("verdict").and_then(Value::as_str),
            args.get("skip"),
        ) {
            (Some("allow"), _) => {
                let scope = match args
                    .get("scope")
                    .map(|s| serde_json::from_value::<Scope>(s.clone()))
                {
                    None => None,
                    Some(Ok(scope)) => Some(scope),
                    Some(Err(e)) => return error_text(format!("scope: {e}")),
                };
                WireReply::Approve { scope }
            }
            (Some("deny"), _) => WireReply::Deny,
            (Some(other), _) => return error_text(format!("verdict {other:?}: use allow or deny")),
            (None, Some(Value::Bool(true))) => WireReply::Skip,
            (None, _) => {
                let answers = args.get("answers").cloned().unwrap_or_else(|| json!({}));
                match serde_json::from_value(answers) {
                    Ok(answers) => WireReply::Answer {
                        answers,
                        notes: Default::default(),
                    },
                    Err(e) => return error_text(format!("answers: {e}")),
                }
            }
        };
        let waiting = {
            let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            runs.values()
                .find(|run| {
                    run.try_lock()
                        .is_ok_and(|run| run.waiting.as_ref().is_some_and(|w| w.id == id))
                })
                .cloned()
        };
        let socket = match &waiting {
            Some(run) => run.lock().await.socket.clone(),
            None => self.settings.socket.clone(),
        };
        let elsewhere = match (self.reply(&socket, id, reply).await, &waiting) {
            (Ok(()), _) => false,
            // The run goes on with the reply that came first.
            (Err(refused), Some(_)) if refused.answered_elsewhere() => true,
            (Err(refused), _) => return error_text(refused.to_string()),
        };
        let Some(run) = waiting else {
            return text(json!({"status": "answered", "question_id": question_id}));
        };
        let mut run = run.lock().await;
        run.waiting = None;
        let mut followed = self.follow(&mut run, peer).await;
        if elsewhere {
            followed.content.push(ContentBlock::text(format!(
                "question {question_id} was answered elsewhere first (the desktop or hark answer); \
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

/// Why the daemon did not take the studio's reply.
#[derive(Debug)]
enum Refused {
    Daemon(WireError),
    Other(String),
}

impl Refused {
    /// The item was settled by another reply first.
    fn answered_elsewhere(&self) -> bool {
        matches!(self, Refused::Daemon(e) if e.code == ErrorCode::NotPending)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Daemon(e) => f.write_str(&e.message),
            Refused::Other(message) => f.write_str(message),
        }
    }
}

/// An approval's picked option as the verdict it stands for.
fn verdict(answers: &hark_core::model::resolve::Picks) -> Option<WireReply> {
    use hark_core::model::approval::{Approval, Verdict};
    let Some(hark_core::model::resolve::Pick::Label(label)) = answers.values().next() else {
        return None;
    };
    Some(match Approval::verdict_of(label)? {
        Verdict::Allow(scope) => WireReply::Approve { scope: Some(scope) },
        Verdict::Deny => WireReply::Deny,
    })
}

/// The fallback's result: what the run waits on.
fn awaiting(run: &Run, item: &ItemView) -> Value {
    json!({"status": "awaiting_operator", "run_id": run.id, "session": run.session,
        "question_id": item.id, "asked_by": item.attribution.line,
        "questions": item.request.questions, "approval": item.approval})
}

impl ServerHandler for Studio {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                STUDIO_NAME,
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Dispatch agents with `run`; their questions to the operator come to you (as elicitations, \
                 or as awaiting_operator results you answer with `answer`).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(Studio::tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Studio::tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "run" => Ok(self.run(&args, &context.peer).await.into()),
            "answer" => Ok(self.answer(&args, &context.peer).await.into()),
            "runs" => Ok(self.list().into()),
            other => Err(McpError::invalid_params(
                format!("unknown tool {other:?}; this server has run, answer and runs"),
                None,
            )),
        }
    }
}
