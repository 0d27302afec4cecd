//! The `operator` MCP server over `tokio::io::duplex`, with rmcp's client
//! on the other end (as rmcp's own tests do), backed by a daemon served
//! in-process on a socket in a temp dir. Time is paused: waits cost
//! nothing, and the runtime only moves the clock when every task is idle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hark_core::config::Config;
use hark_core::daemon::listener::{self, Daemon};
use hark_core::gate::policy::Policy;
use hark_core::model::item::{Asker, Item, NOT_ANSWERED, Outcome};
use hark_core::model::resolve::Pick;
use hark_core::model::validate::Rules;
use hark_core::prompter::script::{Scripted, ScriptedPrompter};
use hark_core::registry::{Event, Registry};
use hark_mcp::hook::{HookInput, pre_tool_use};
use hark_mcp::{McpSettings, OperatorServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CustomRequest, ProgressNotificationParam,
    Request,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::{broadcast, mpsc};

/// A daemon serving `socket` on this runtime with the scripted operator.
struct Served {
    socket: PathBuf,
    registry: Registry,
    _dir: TempDir,
}

impl Served {
    /// Serves `script` (question → what the operator picks; `{}` answers nothing).
    fn start(script: HashMap<String, Scripted>) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("hark.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let registry = Registry::new();
        // No test dispatches a run: the dispatcher is never asked to start one.
        let daemon = Daemon::new(
            registry.clone(),
            Arc::new(ScriptedPrompter::new(script)),
            &Config::default(),
            socket.clone(),
            dir.path().join("runs"),
        );
        tokio::spawn(listener::run(listener, daemon, std::future::pending()));
        Served {
            socket,
            registry,
            _dir: dir,
        }
    }
}

/// An agent host: an MCP client that reports each progress message.
#[derive(Debug, Clone)]
struct Host {
    progress: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Host {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params.message.unwrap_or_default());
    }
}

type Agent = RunningService<RoleClient, Host>;

/// What the server is started with: session `mcp-session` on `socket`,
/// no progress notes unless a test asks for them.
fn settings(socket: &Path) -> McpSettings {
    McpSettings {
        socket: socket.to_owned(),
        session_id: "mcp-session".into(),
        timeout: None,
        rules: Rules::default(),
        progress_interval: Duration::from_secs(3600),
        asker: Asker {
            pid: Some(4242),
            ..Asker::default()
        },
        approvals: false,
        policy: Some(Policy::default()),
    }
}

/// Serves `settings` on one end of a duplex pipe and connects a client to
/// the other; returns the client and where its progress notes arrive.
async fn connect(settings: McpSettings) -> (Agent, mpsc::UnboundedReceiver<String>) {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let server = OperatorServer::new(settings)
            .serve(server_io)
            .await
            .unwrap();
        let _ = server.waiting().await;
    });
    let (progress, notes) = mpsc::unbounded_channel();
    (Host { progress }.serve(client_io).await.unwrap(), notes)
}

fn db() -> Value {
    json!({"question": "Which database?", "header": "Database", "multiSelect": false,
        "options": [{"label": "Postgres (Recommended)", "description": "a server"},
                    {"label": "SQLite", "description": "a file"}]})
}

fn call(tool: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(args)
}

async fn ask(agent: &Agent, args: Value) -> CallToolResult {
    agent.call_tool(call("ask", args)).await.unwrap()
}

/// The text of a result's one content block.
fn text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "{result:?}");
    result.content[0].as_text().expect("text").text.clone()
}

/// The next item the registry opens.
async fn added(events: &mut broadcast::Receiver<Event>) -> Arc<Item> {
    loop {
        if let Event::Added(item) = events.recv().await.unwrap() {
            return item;
        }
    }
}

/// The next settlement the registry announces.
async fn settled(events: &mut broadcast::Receiver<Event>) -> (Arc<Item>, Outcome) {
    loop {
        if let Event::Settled { item, outcome, .. } = events.recv().await.unwrap() {
            return (item, outcome);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn tools_list_shows_ask_and_approve_only_with_approvals_on() {
    let nowhere = tempfile::tempdir().unwrap();
    let socket = nowhere.path().join("hark.sock");
    let names = |tools: Vec<rmcp::model::Tool>| {
        tools
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };

    let (agent, _) = connect(settings(&socket)).await;
    let tools = agent.list_all_tools().await.unwrap();
    assert_eq!(
        json!(tools[0].input_schema["required"]),
        json!(["questions"])
    );
    assert_eq!(names(tools), ["ask"]);
    let refused = agent
        .call_tool(call("approve", json!({"tool_name": "Edit", "input": {}})))
        .await;
    assert!(refused.is_err(), "approve is not served: {refused:?}");
    agent.cancel().await.unwrap();

    let (agent, _) = connect(McpSettings {
        approvals: true,
        ..settings(&socket)
    })
    .await;
    assert_eq!(
        names(agent.list_all_tools().await.unwrap()),
        ["ask", "approve"]
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_answered_ask_returns_the_answers_as_the_tool_result() {
    let served = Served::start(HashMap::from([(
        "Which database?".to_owned(),
        Scripted::Pick(Pick::Label("SQLite".into())),
    )]));
    let mut events = served.registry.subscribe();
    let (agent, _) = connect(settings(&served.socket)).await;
    let result = ask(&agent, json!({"questions": [db()]})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);

    // The item was the session's, asked by the agent through this client.
    let (item, outcome) = settled(&mut events).await;
    assert_eq!(outcome.name(), "answered");
    assert_eq!(item.session_id, "mcp-session");
    assert_eq!(item.asker.pid, Some(4242));
    let client = Host::get_info(&Host {
        progress: mpsc::unbounded_channel().0,
    })
    .client_info;
    assert_eq!(
        item.asker.client,
        Some(format!("{} {}", client.name, client.version))
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_malformed_call_is_an_error_listing_its_issues_with_paths() {
    let served = Served::start(HashMap::new());
    let mut events = served.registry.subscribe();
    let (agent, _) = connect(settings(&served.socket)).await;
    let lonely = json!({"question": "Only one?", "header": "H", "multiSelect": false,
        "options": [{"label": "A", "description": ""}]});
    let result = ask(&agent, json!({"questions": [db(), lonely]})).await;
    assert_eq!(result.is_error, Some(true));
    let error = text(&result);
    let mut lines = error.lines();
    assert_eq!(
        lines.next(),
        Some("invalid ask call; fix these and call again:")
    );
    let issues: Vec<&str> = lines.collect();
    assert_eq!(issues.len(), 1, "{error}");
    assert!(issues[0].starts_with("- questions[1].options: "), "{error}");

    let result = ask(&agent, json!({"questions": "Which database?"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("\n- questions: "), "{result:?}");
    // Nobody was asked: a malformed call never parks a person.
    assert!(matches!(
        events.try_recv(),
        Err(broadcast::error::TryRecvError::Empty)
    ));
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_no_operator_attached_the_ask_is_not_answered_at_once() {
    let nowhere = tempfile::tempdir().unwrap();
    let (agent, _) = connect(settings(&nowhere.path().join("hark.sock"))).await;
    let asked = tokio::time::Instant::now();
    let result = ask(&agent, json!({"questions": [db()]})).await;
    assert_eq!(asked.elapsed(), Duration::ZERO, "no wait of any length");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!(
            "{NOT_ANSWERED} (no operator is attached (hark is not running); decide on your own judgement)"
        )
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_ask_sends_progress_then_times_out() {
    let served = Served::start(HashMap::new());
    let (agent, mut notes) = connect(McpSettings {
        timeout: Some(Duration::from_secs(25)),
        progress_interval: Duration::from_secs(10),
        ..settings(&served.socket)
    })
    .await;
    let asked = tokio::time::Instant::now();
    let result = ask(&agent, json!({"questions": [db()]})).await;
    assert_eq!(asked.elapsed(), Duration::from_secs(25));
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (timed out after 25 s; no default was applied)")
    );
    assert_eq!(
        notes.recv().await.unwrap(),
        "waiting for the operator (15 s left)"
    );
    assert_eq!(
        notes.recv().await.unwrap(),
        "waiting for the operator (5 s left)"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_client_cancellation_cancels_the_pending_question() {
    let served = Served::start(HashMap::new());
    let mut events = served.registry.subscribe();
    let (agent, _) = connect(settings(&served.socket)).await;
    let request =
        ClientRequest::CallToolRequest(Request::new(call("ask", json!({"questions": [db()]}))));
    let handle = agent
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let item = added(&mut events).await;
    assert_eq!(item.session_id, "mcp-session");

    handle
        .cancel(Some("the host gave up".into()))
        .await
        .unwrap();
    let (settled, outcome) = settled(&mut events).await;
    assert_eq!(settled.id, item.id);
    assert_eq!(
        outcome,
        Outcome::Cancelled {
            reason: "the agent cancelled the call".into()
        }
    );
    assert!(served.registry.pending().is_empty());
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_approvals_on_a_read_passes_and_a_write_with_no_operator_is_denied() {
    let nowhere = tempfile::tempdir().unwrap();
    let (agent, _) = connect(McpSettings {
        approvals: true,
        ..settings(&nowhere.path().join("hark.sock"))
    })
    .await;
    let input = json!({"file_path": "/src/lib.rs"});
    let read = agent
        .call_tool(call(
            "approve",
            json!({"tool_name": "Read", "input": input}),
        ))
        .await
        .unwrap();
    let verdict: Value = serde_json::from_str(&text(&read)).unwrap();
    assert_eq!(verdict, json!({"behavior": "allow", "updatedInput": input}));

    let edit = json!({"tool_name": "Edit",
        "input": {"file_path": "/src/lib.rs", "old_string": "a", "new_string": "b"}});
    let write = agent.call_tool(call("approve", edit)).await.unwrap();
    assert_eq!(write.is_error, Some(false), "a verdict, not a tool error");
    let verdict: Value = serde_json::from_str(&text(&write)).unwrap();
    assert_eq!(verdict["behavior"], "deny");
    assert!(
        verdict["message"]
            .as_str()
            .unwrap()
            .contains("no operator is attached"),
        "{verdict}"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_arguments_are_not_an_object_is_a_tool_error_saying_so() {
    let served = Served::start(HashMap::new());
    let (agent, _) = connect(settings(&served.socket)).await;
    for (arguments, kind) in [
        (json!([db()]), "an array"),
        (json!("questions"), "a string"),
        (json!(7), "a number"),
    ] {
        let request = ClientRequest::CustomRequest(CustomRequest::new(
            "tools/call",
            Some(json!({"name": "ask", "arguments": arguments})),
        ));
        let response = agent.send_request(request).await.unwrap();
        let result: CallToolResult =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(result.is_error, Some(true), "{arguments}: {result:?}");
        assert_eq!(
            text(&result),
            format!(
                "the call's arguments must be an object (`{{\"questions\": [...]}}`), not {kind}"
            )
        );
    }
    // The server goes on serving well-formed calls.
    let listed = agent.list_all_tools().await.unwrap();
    assert!(listed.iter().any(|t| t.name == "ask"));
    assert!(served.registry.pending().is_empty());
    agent.cancel().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_park_hook_parks_an_unanswered_ask_but_not_a_sub_agents() {
    let served = Served::start(HashMap::new());
    let mut settings = settings(&served.socket);
    settings.timeout = Some(Duration::from_secs(1));
    let input = |agent_id: Option<&str>| HookInput {
        tool_name: "mcp__operator__ask".into(),
        tool_input: json!({"questions": [db()]}),
        tool_use_id: "toolu_1".into(),
        agent_id: agent_id.map(str::to_owned),
        agent_type: agent_id.map(|_| "general-purpose".to_owned()),
        transcript_path: Some("/saved/session.jsonl".into()),
    };
    // A sub-agent's call is left to its ordinary way: no item, no verdict.
    assert_eq!(
        pre_tool_use(&settings, &input(Some("a1")), false).await,
        None
    );
    assert!(served.registry.pending().is_empty());
    let deferred = pre_tool_use(&settings, &input(None), false).await.unwrap();
    assert_eq!(
        deferred["hookSpecificOutput"]["permissionDecision"], "defer",
        "{deferred}"
    );
    let parked = served.registry.pending();
    assert_eq!(parked.len(), 1);
    assert!(parked[0].parked_at().is_some());
    // The saved session is kept with the item: resuming checks it is there.
    assert_eq!(
        parked[0].parking.as_ref().unwrap().transcript.as_deref(),
        Some(std::path::Path::new("/saved/session.jsonl"))
    );
}
