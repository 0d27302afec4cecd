//! `hark mcp-studio` driven by real MCP clients over stdio (rmcp's): `run`
//! dispatches the fake agent, whose questions reach the client as an
//! elicitation of the form its revision allows, or as `awaiting_operator`
//! that `answer` settles; an answer from `hark answer` first withdraws the
//! elicitation.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::*;
use hark_mcp::elicitation::{Form, schema_json};

mod revisions;

/// What the client does with an elicitation.
#[derive(Clone)]
enum Says {
    /// Accepts with this content.
    Accept(Value),
    Decline,
    Cancel,
    /// Waits until the server withdraws it.
    Wait,
}

/// A driving client: its revision, whether it advertises elicitation,
/// and what it answers; it keeps every elicitation it was sent.
#[derive(Clone)]
struct Client {
    version: ProtocolVersion,
    elicits: bool,
    says: Says,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    withdrawn: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> InitializeRequestParams {
        let capabilities = if self.elicits {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        let mut info =
            InitializeRequestParams::new(capabilities, Implementation::new("studio-test", "1"));
        info.protocol_version = self.version.clone();
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            let schema = serde_json::to_value(requested_schema).unwrap();
            self.seen.lock().unwrap().push((message, schema));
        }
        Ok(match &self.says {
            Says::Accept(content) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(content.clone());
                result
            }
            Says::Decline => ElicitResult::new(ElicitationAction::Decline),
            Says::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Says::Wait => {
                context.ct.cancelled().await;
                self.withdrawn.notify_one();
                ElicitResult::new(ElicitationAction::Cancel)
            }
        })
    }
}

impl Client {
    fn new(version: ProtocolVersion, elicits: bool, says: Says) -> Client {
        Client {
            version,
            elicits,
            says,
            seen: Arc::default(),
            withdrawn: Arc::default(),
        }
    }
}

/// A daemon with nobody at its terminal, whose runs start the fake agent;
/// a decline however quick is taken as the operator's (the reflex is 0).
fn daemon() -> Daemon {
    daemon_with("studio_reflex_ms = 0\n")
}

/// [`daemon`] with `config` added to its config.
fn daemon_with(config: &str) -> Daemon {
    let sandbox = sandbox();
    std::fs::write(
        sandbox.config(),
        format!(
            "agent_command = {:?}\n{config}",
            fake_claude().display().to_string()
        ),
    )
    .unwrap();
    serve_in(&sandbox, json!({}), &[])
}

/// `hark mcp-studio` in `daemon`'s sandbox, as `client` starts it.
async fn studio(daemon: &Daemon, client: Client) -> RunningService<RoleClient, Client> {
    let command = daemon.sandbox.command(bin_dir().join("hark"));
    let mut command = tokio::process::Command::from(command);
    command.arg("mcp-studio");
    let transport = TokioChildProcess::new(command).unwrap();
    // 2026-07-28 has no handshake: the client discovers the server and
    // names its revision in every request, as Claude Code 2.1.332 does.
    if client.version >= ProtocolVersion::V_2026_07_28 {
        let preferred_versions = vec![client.version.clone()];
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions };
        return client
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .unwrap();
    }
    client.serve(transport).await.unwrap()
}

/// The two questions the fake agent asks: a single- and a multi-select.
fn asked() -> Value {
    questions(&[db(), features()])
}

/// `tool` called with `args` (an object), as the client got it back.
async fn call_result(
    service: &RunningService<RoleClient, Client>,
    tool: &'static str,
    args: Value,
) -> rmcp::model::CallToolResult {
    let Value::Object(args) = args else {
        unreachable!()
    };
    service
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

/// `tool` called with `args`, which must succeed: its JSON result.
async fn call(
    service: &RunningService<RoleClient, Client>,
    tool: &'static str,
    args: Value,
) -> Value {
    let result = call_result(service, tool, args).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    serde_json::from_str(&text(&result)).unwrap()
}

fn run_args(session: &str) -> Value {
    json!({"prompt": format!("ASK {}", asked()), "session": session})
}

/// The questions as the core reads them.
fn core_questions() -> Vec<hark_core::model::schema::Question> {
    serde_json::from_value(asked()["questions"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_of_2025_11_25_is_answered_and_the_run_returns_its_result() {
    let daemon = daemon();
    let client = Client::new(
        ProtocolVersion::V_2025_11_25,
        true,
        Says::Accept(json!({"q1": "SQLite", "q2": ["Auth (Recommended)", "Search"]})),
    );
    let seen = client.seen.clone();
    let service = studio(&daemon, client).await;
    let ended = call(&service, "run", run_args("studio-labelled")).await;
    assert_eq!(ended["status"], "finished", "{ended}");
    assert_eq!(ended["exit_code"], 0);
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Auth (Recommended)","Search"]}}"#,
        "the agent got exactly the picks"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, schema_json(&core_questions(), Form::Labelled));
    assert!(
        seen[0].0.contains("session studio-labelled"),
        "who asks: {}",
        seen[0].0
    );
    assert!(seen[0].0.contains("Which database?"), "{}", seen[0].0);
    // The store and the trace name the studio as the surface that replied.
    let items = inbox(&daemon.sandbox);
    assert_eq!(items[0]["replied_by"], "studio", "{}", items[0]);
    daemon
        .log
        .wait_event("operator.question.answered", &[("surface", "studio")]);
    service.cancel().await.unwrap();
}

/// `run` takes a run's options as `hark run` does (one struct, its schema
/// generated): one the hand-written schema lacked, `no_confine`, reaches
/// the run, which records itself unconfined.
#[tokio::test(flavor = "multi_thread")]
async fn run_takes_every_option_of_hark_run() {
    let daemon = daemon();
    let service = studio(
        &daemon,
        Client::new(ProtocolVersion::V_2025_11_25, false, Says::Decline),
    )
    .await;
    let tools = service.list_all_tools().await.unwrap();
    let run = tools.iter().find(|t| t.name == "run").unwrap();
    for option in ["verb", "agent_kind", "no_confine", "intake", "on_timeout"] {
        assert!(
            run.input_schema["properties"].get(option).is_some(),
            "run lacks {option}"
        );
    }
    let ended = call(
        &service,
        "run",
        json!({"prompt": "SAY done", "session": "studio-unconfined", "no_confine": true}),
    )
    .await;
    assert_eq!(ended["status"], "finished", "{ended}");
    let record = crate::run::run_of(&daemon, "studio-unconfined");
    assert_eq!(record["confinement"], json!({"state": "off"}), "{record}");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_of_2025_06_18_is_flat_and_its_booleans_are_the_multi_select() {
    let daemon = daemon();
    let client = Client::new(
        ProtocolVersion::V_2025_06_18,
        true,
        Says::Accept(
            json!({"q1": "Postgres (Recommended)", "q2_1": false, "q2_2": true, "q2_3": false}),
        ),
    );
    let seen = client.seen.clone();
    let service = studio(&daemon, client).await;
    let ended = call(&service, "run", run_args("studio-flat")).await;
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"Postgres (Recommended)","Which features?":["Billing"]}}"#
    );
    assert_eq!(
        seen.lock().unwrap()[0].1,
        schema_json(&core_questions(), Form::Flat)
    );
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_elicitation_is_a_skip_the_agent_is_told_of() {
    let daemon = daemon();
    let service = studio(
        &daemon,
        Client::new(ProtocolVersion::V_2025_11_25, true, Says::Decline),
    )
    .await;
    let ended = call(&service, "run", run_args("studio-declined")).await;
    assert_eq!(ended["status"], "finished", "{ended}");
    let result = ended["result"].as_str().unwrap();
    assert!(
        result.contains(NOT_ANSWERED) && result.contains("skipped"),
        "{result}"
    );
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_elicitation_the_run_awaits_the_operator_and_answer_delivers() {
    let daemon = daemon();
    let service = studio(
        &daemon,
        Client::new(ProtocolVersion::V_2025_11_25, false, Says::Decline),
    )
    .await;
    let waiting = call(&service, "run", run_args("studio-fallback")).await;
    assert_eq!(waiting["status"], "awaiting_operator", "{waiting}");
    assert_eq!(waiting["questions"], asked()["questions"]);
    let question_id = waiting["question_id"].as_str().unwrap().to_owned();
    let listed = call(&service, "runs", json!({})).await;
    assert_eq!(listed["runs"][0]["question_id"], question_id.as_str());

    let refused = call_result(
        &service,
        "answer",
        json!({"question_id": question_id, "answers": {"Which database?": "MySQL"}}),
    )
    .await;
    assert_eq!(
        refused.is_error,
        Some(true),
        "a label no option has is refused"
    );

    let ended = call(
        &service,
        "answer",
        json!({"question_id": question_id, "answers": {"Which database?": "SQLite"}}),
    )
    .await;
    assert_eq!(ended["status"], "finished", "{ended}");
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Auth (Recommended)"]}}"#,
        "the question left out took its default"
    );
    assert_eq!(inbox(&daemon.sandbox)[0]["replied_by"], "studio");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_after_one_from_elsewhere_is_not_used_and_the_run_goes_on() {
    let daemon = daemon();
    let service = studio(
        &daemon,
        Client::new(ProtocolVersion::V_2025_11_25, false, Says::Decline),
    )
    .await;
    let waiting = call(&service, "run", run_args("studio-late")).await;
    let question_id = waiting["question_id"].as_str().unwrap().to_owned();
    answer(&daemon.sandbox, &question_id, "Postgres (Recommended)");

    let result = call_result(
        &service,
        "answer",
        json!({"question_id": question_id, "answers": {"Which database?": "SQLite"}}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let ended: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(ended["status"], "finished", "{ended}");
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"Postgres (Recommended)","Which features?":["Auth (Recommended)"]}}"#,
        "the reply that came first stands"
    );
    let said: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert!(
        said.iter().any(|t| t.contains("answered elsewhere first")),
        "the client is told its answer was not used: {said:?}"
    );
    assert_eq!(inbox(&daemon.sandbox)[0]["replied_by"], "cli");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn hark_answer_first_withdraws_the_elicitation_and_the_run_goes_on() {
    let daemon = daemon();
    let client = Client::new(ProtocolVersion::V_2025_11_25, true, Says::Wait);
    let withdrawn = client.withdrawn.clone();
    let service = Arc::new(studio(&daemon, client).await);
    let running = {
        let service = service.clone();
        tokio::spawn(async move { call(&service, "run", run_args("studio-elsewhere")).await })
    };
    let id = daemon.log.question_id("studio-elsewhere");
    answer(&daemon.sandbox, &id, "SQLite");
    let ended = running.await.unwrap();
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Auth (Recommended)"]}}"#
    );
    assert_eq!(
        inbox(&daemon.sandbox)[0]["replied_by"],
        "cli",
        "hark answer's reply stands"
    );
    tokio::time::timeout(hark_harness::PATIENCE, withdrawn.notified())
        .await
        .expect("the client was told the elicitation is withdrawn");
}

/// `tests/clients/studio_client.py` (the official MCP Python SDK) against
/// the studio in `daemon`'s sandbox; its one JSON line.
fn python_client(daemon: &Daemon, mode: &str, answers: Value) -> Value {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/studio_client.py");
    // The sandbox has its own HOME: the user's site-packages (where
    // scripts/setup installs `mcp`) are named outright.
    let base = std::process::Command::new("python3")
        .args(["-m", "site", "--user-base"])
        .output()
        .unwrap();
    let out = daemon
        .sandbox
        .command("python3")
        .arg(script)
        .arg(bin_dir().join("hark"))
        .arg(format!("ASK {}", asked()))
        .arg(mode)
        .env("STUDIO_ANSWERS", answers.to_string())
        .env(
            "PYTHONUSERBASE",
            String::from_utf8_lossy(&base.stdout).trim(),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python client failed (scripts/setup --tests installs its `mcp` package):\n{stderr}"
    );
    serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", stdout(&out)))
}

#[test]
fn the_python_sdks_client_answers_by_elicitation_and_by_answer() {
    let daemon = daemon();
    let picked = json!({"q1": "SQLite", "q2": ["Search"]});
    let got = python_client(&daemon, "elicit", picked);
    assert_eq!(got["protocol"], "2025-11-25", "{got}");
    assert_eq!(
        got["elicitations"][0]["schema"],
        schema_json(&core_questions(), Form::Labelled)
    );
    assert_eq!(got["results"][0]["status"], "finished", "{got}");
    assert_eq!(
        got["results"][0]["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Search"]}}"#
    );

    let by_answer = json!({"Which database?": "SQLite", "Which features?": ["Billing"]});
    let got = python_client(&daemon, "fallback", by_answer);
    assert_eq!(got["results"][0]["status"], "awaiting_operator", "{got}");
    assert_eq!(
        got["results"][1]["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Billing"]}}"#,
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn revisions_before_elicitation_get_awaiting_operator() {
    let daemon = daemon();
    // A client claiming the capability on a revision that has none.
    for version in [ProtocolVersion::V_2024_11_05, ProtocolVersion::V_2025_03_26] {
        let client = Client::new(version.clone(), true, Says::Decline);
        let seen = client.seen.clone();
        let service = studio(&daemon, client).await;
        let session = format!("studio-{}", version.as_str());
        let waiting = call(&service, "run", run_args(&session)).await;
        assert_eq!(
            waiting["status"], "awaiting_operator",
            "{version:?}: {waiting}"
        );
        assert!(
            seen.lock().unwrap().is_empty(),
            "{version:?}: nothing was elicited"
        );
        let ended = call(
            &service,
            "answer",
            json!({"question_id": waiting["question_id"], "skip": true}),
        )
        .await;
        assert_eq!(ended["status"], "finished", "{version:?}: {ended}");
        assert!(
            ended["result"].as_str().unwrap().contains("skipped"),
            "{ended}"
        );
        service.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_hangs_up_mid_run_leaves_no_agent_behind() {
    let daemon = daemon();
    let log = daemon.sandbox.path("fake.log");
    let mut command = tokio::process::Command::from(daemon.sandbox.command(bin_dir().join("hark")));
    command.arg("mcp-studio").env("FAKE_CLAUDE_LOG", &log);
    let client = Client::new(ProtocolVersion::V_2025_11_25, true, Says::Wait);
    let service = client
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let peer = service.peer().clone();
    let running = tokio::spawn(async move {
        let Value::Object(args) = run_args("studio-hangup") else {
            unreachable!()
        };
        let _ = peer
            .call_tool(CallToolRequestParams::new("run").with_arguments(args))
            .await;
    });
    daemon.log.question_id("studio-hangup");
    let agent = invocations(&log)[0]["process"].clone();
    service.cancel().await.unwrap();
    running.abort();
    assert!(
        hark_harness::process::wait_identity_gone(&agent, std::time::Duration::from_secs(20)),
        "the agent {agent} outlived the studio"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_runs_write_is_approved_or_denied_by_elicitation() {
    for (says, written) in [
        (Says::Accept(json!({"q1": "Allow this action only"})), true),
        (Says::Decline, false),
    ] {
        let daemon = daemon();
        let target = daemon.sandbox.path("notes.txt");
        let write = format!(
            "TOOL Write {}",
            json!({"file_path": target, "content": "hello"})
        );
        let client = Client::new(ProtocolVersion::V_2025_11_25, true, says);
        let seen = client.seen.clone();
        let service = studio(&daemon, client).await;
        let ended = call(
            &service,
            "run",
            json!({"prompt": format!("{write}\nSAY after"), "session": "studio-gate", "read_only": true}),
        )
        .await;
        assert_eq!(ended["status"], "finished", "{ended}");
        assert_eq!(target.exists(), written, "{ended}");
        let schema = seen.lock().unwrap()[0].1.clone();
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(
            properties.keys().collect::<Vec<_>>(),
            ["q1"],
            "an approval takes no free text"
        );
        let labels: Vec<&str> = schema["properties"]["q1"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["const"].as_str().unwrap())
            .collect();
        assert!(
            labels.contains(&"Allow this action only") && labels.contains(&"Deny"),
            "{labels:?}"
        );
        let item = &inbox(&daemon.sandbox)[0];
        assert_eq!(item["kind"], "approval");
        assert_eq!(
            item["outcome"]["outcome"],
            if written { "approved" } else { "denied" },
            "{item}"
        );
        if written {
            assert_eq!(item["replied_by"], "studio", "{item}");
        }
        service.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_daemon_running_the_studio_serves_its_runs_itself() {
    let sandbox = sandbox();
    std::fs::write(
        sandbox.config(),
        format!(
            "agent_command = {:?}\n",
            fake_claude().display().to_string()
        ),
    )
    .unwrap();
    let mut command = tokio::process::Command::from(sandbox.command(bin_dir().join("hark")));
    command.arg("mcp-studio");
    let client = Client::new(
        ProtocolVersion::V_2025_11_25,
        true,
        Says::Accept(json!({"q1": "SQLite", "q2": ["Billing"]})),
    );
    let service = client
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let ended = call(&service, "run", run_args("studio-alone")).await;
    assert_eq!(ended["status"], "finished", "{ended}");
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Billing"]}}"#
    );
    // The app's socket stayed free, and the app's store untouched.
    assert!(!sandbox.socket().exists());
    assert!(!sandbox.data_dir().join("hark.db").exists());
    assert!(sandbox.data_dir().join("studio/hark.db").exists());
    service.cancel().await.unwrap();
}
