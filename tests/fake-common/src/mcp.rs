//! The MCP client every fake is: its servers started as child processes
//! (rmcp's `TokioChildProcess`) and initialized, their tools called with
//! the options each CLI uses, and what a call's result says.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request, ServerResult};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};

/// A started, initialized MCP server.
pub type Server = RunningService<RoleClient, ()>;

/// What the model reads of a call cut at its timeout, in the CLIs on the
/// TypeScript MCP SDK (OpenCode and Gemini CLI; measured).
pub const SDK_TIMED_OUT: &str = "MCP error -32001: Request timed out";

/// Why a server could not be used; each says what its cause says.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its command did not start.
    #[error(transparent)]
    Spawn(std::io::Error),
    /// It started, and did not complete MCP's initialization.
    #[error(transparent)]
    Initialize(Box<ClientInitializeError>),
}

/// A call's arguments that are not a JSON object.
#[derive(Debug, thiserror::Error)]
#[error("arguments are not an object")]
pub struct NotAnObject;

/// The model's input as a call's arguments, which must be an object.
pub fn arguments(input: &Value) -> Result<Map<String, Value>, NotAnObject> {
    match input {
        Value::Object(arguments) => Ok(arguments.clone()),
        _ => Err(NotAnObject),
    }
}

/// A call's options: cut at `timeout`.
pub fn timeout(timeout: Duration) -> PeerRequestOptions {
    let mut options = PeerRequestOptions::no_options();
    options.timeout = Some(timeout);
    options
}

/// Starts `command` as an MCP server and initializes it.
pub async fn start(command: tokio::process::Command) -> Result<Server, StartError> {
    let transport = TokioChildProcess::new(command).map_err(StartError::Spawn)?;
    ().serve(transport)
        .await
        .map_err(|e| StartError::Initialize(Box::new(e)))
}

/// Starts each server of a config (`NAME: ENTRY`) with `start`; one that
/// fails is told to `failed` and left out, and the run goes on. Each kept
/// with its entry.
pub async fn start_each<'a>(
    entries: impl IntoIterator<Item = (&'a String, &'a Value)>,
    start: impl AsyncFn(&str, &Value) -> Result<Server, String>,
    failed: impl Fn(&str, &str),
) -> BTreeMap<String, (Server, Value)> {
    let mut servers = BTreeMap::new();
    for (name, entry) in entries {
        match start(name, entry).await {
            Ok(server) => {
                servers.insert(name.clone(), (server, entry.clone()));
            }
            Err(e) => failed(name, &e),
        }
    }
    servers
}

/// Sends `tools/call` of `tool` with `options`; the handle its answer
/// comes on (its `id` names the request, to cancel it).
pub async fn send_call(
    server: &Server,
    tool: &str,
    arguments: Map<String, Value>,
    options: PeerRequestOptions,
) -> Result<RequestHandle<RoleClient>, ServiceError> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    server
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            options,
        )
        .await
}

/// The result a `tools/call` sent by [`send_call`] comes to.
pub async fn result(handle: RequestHandle<RoleClient>) -> Result<CallToolResult, ServiceError> {
    match handle.await_response().await? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Calls `tool` with `options`, and waits for its result.
pub async fn call(
    server: &Server,
    tool: &str,
    arguments: Map<String, Value>,
    options: PeerRequestOptions,
) -> Result<CallToolResult, ServiceError> {
    result(send_call(server, tool, arguments, options).await?).await
}

/// A failed call as the fakes of the CLIs that only print it word it.
pub fn failure(error: &ServiceError) -> String {
    match error {
        ServiceError::UnexpectedResponse => "unexpected response".to_owned(),
        other => other.to_string(),
    }
}

/// The text of a tool result's content, its parts a line each.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result's text, as an error where the tool says it is one.
pub fn outcome(result: &CallToolResult) -> Result<String, String> {
    match result.is_error {
        Some(true) => Err(text(result)),
        _ => Ok(text(result)),
    }
}

/// Ends every server's session (and its process) at the run's end.
pub async fn stop(servers: impl IntoIterator<Item = Server>) {
    for server in servers {
        let _ = server.cancel().await;
    }
}

/// [`stop`] for servers kept with their entries ([`start_each`]).
pub async fn stop_each(servers: &mut BTreeMap<String, (Server, Value)>) {
    stop(std::mem::take(servers).into_values().map(|(s, _)| s)).await;
}
