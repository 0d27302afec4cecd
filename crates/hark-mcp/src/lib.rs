//! `hark mcp-operator-ask`: the MCP stdio server an agent spawns. Server
//! `operator`, one tool `ask` whose input is AskUserQuestion's, so the agent
//! sees `mcp__operator__ask`.
//!
//! The call is validated here first (a malformed call never parks a person),
//! then carried over the bridge socket to whoever is the operator. Every
//! unanswered outcome is a tool error whose text starts
//! [`NOT_ANSWERED`](hark_core::model::item::NOT_ANSWERED). Logs go to stderr only: stdout
//! belongs to the protocol.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use hark_core::bridge::client::{Call, ClientError, Started};
use hark_core::bridge::wire::{Caller, ClientFrame, MAX_FRAME};
use hark_core::gate::policy::{Class, Policy, permission_result};
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Asker, Outcome};
use hark_core::model::schema::{
    MAX_HEADER_CHARS, MAX_OPTIONS, MAX_PREVIEW_BYTES, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS,
};
use hark_core::model::validate::{Rules, describe, kind, validate};
use hark_core::{env, trace};

pub mod elicitation;
pub mod hook;
pub mod permission;
pub mod start;
pub mod studio;

/// The MCP server's name: the agent sees the tool as `mcp__operator__ask`.
pub const SERVER_NAME: &str = hark_core::agent::SERVER;
pub const TOOL_NAME: &str = "ask";
/// Where Claude Code puts a tool call's id in the `tools/call` request's
/// `_meta` (the same id its hooks see as `tool_use_id`).
pub const TOOL_USE_META: &str = "claudecode/toolUseId";
/// Claude Code's permission prompt tool (`--permission-prompt-tool
/// mcp__operator__approve`), listed only when started with `--approvals`.
pub const APPROVE_TOOL: &str = "approve";

const APPROVE_DESCRIPTION: &str = "The write-mode gate for an agent dispatched read-only: Claude Code calls it \
(as --permission-prompt-tool) before a step that needs permission. Read-only steps pass; a write asks the \
operator, who may allow it once, for the run or for the session, or deny it. Returns \
{\"behavior\":\"allow\",\"updatedInput\":…} or {\"behavior\":\"deny\",\"message\":…}.";

const TOOL_DESCRIPTION: &str = "Ask the human operator one to four multiple-choice questions and wait for the answers. \
Use it for decisions that belong to the operator (scope, trade-offs, anything you would otherwise guess). \
Each question has 2-4 options; the operator may also type free text. If you recommend a specific option, \
make it the first option in the list and add \" (Recommended)\" at the end of its label (or name it in \
\"default\"), so confirming is enough. The operator may see only the question dialog: make each question \
stand on its own. Questions, descriptions and previews are shown as Markdown. The result is \
{\"answers\": {\"<question>\": \"<label>\" | [\"<label>\", ...]}}, with \
\"annotations\": {\"<question>\": {\"preview\": \"<the selected option's preview>\", \"notes\": \
\"<free-text notes the user added to their selection>\"}} when there are any. If the operator does not \
answer in time, the tool returns an error: proceed on your own judgement.";

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// The bridge socket to dial.
    pub socket: PathBuf,
    /// The agent session the questions belong to.
    pub session_id: SessionId,
    /// The bounded wait to ask for (the server's default when `None`).
    pub timeout: Option<Duration>,
    pub rules: Rules,
    /// How often to send progress notifications while waiting.
    pub progress_interval: Duration,
    /// Who is asking (the agent process), without the MCP client's name.
    pub asker: Asker,
    /// Whether the `approve` tool is served (a read-only dispatch).
    pub approvals: bool,
    /// What the write-mode gate lets pass without asking; `None` is its
    /// defaults, built only when a step is classified here (they are a
    /// 26 KB TOML table, and most servers never classify one: see
    /// [`start`]).
    pub policy: Option<Policy>,
}

/// The `operator` MCP server.
#[derive(Debug, Clone)]
pub struct OperatorServer {
    settings: Arc<McpSettings>,
}

impl OperatorServer {
    pub fn new(settings: McpSettings) -> OperatorServer {
        OperatorServer {
            settings: Arc::new(settings),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        serve_stdio(self).await
    }

    /// The `approve` tool as `tools/list` shows it.
    pub fn approve_tool(&self) -> Tool {
        Tool::new(
            APPROVE_TOOL,
            APPROVE_DESCRIPTION,
            Arc::new(approve_input_schema()),
        )
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![self.tool()];
        if self.settings.approvals {
            tools.push(self.approve_tool());
        }
        tools
    }

    /// The `ask` tool as `tools/list` shows it.
    pub fn tool(&self) -> Tool {
        Tool::new(
            TOOL_NAME,
            TOOL_DESCRIPTION,
            Arc::new(ask_input_schema(self.settings.rules)),
        )
    }

    async fn ask(&self, args: Value, context: &RequestContext<RoleServer>) -> CallToolResult {
        let request = match validate(&args, self.settings.rules) {
            Ok(_) => args,
            Err(issues) => {
                return error_text(format!(
                    "invalid ask call; fix these and call again:\n{}",
                    describe(&issues)
                ));
            }
        };
        let frame = ClientFrame::Ask {
            caller: self.caller(context),
            request,
        };
        let size = serde_json::to_vec(&frame).map(|v| v.len()).unwrap_or(0);
        if size >= MAX_FRAME {
            return error_text(format!(
                "invalid ask call: it is {size} bytes, over the {MAX_FRAME} byte limit; shorten the questions"
            ));
        }
        let mut call = match Call::start(&self.settings.socket, &frame).await {
            Ok(call) => call,
            Err(ClientError::Unreachable { .. }) => {
                return error_text(Outcome::NoOperator.unanswered_message().unwrap_or_default());
            }
            Err(ClientError::Refused(refusal)) if !refusal.issues.is_empty() => {
                return error_text(format!(
                    "invalid ask call; fix these and call again:\n{}",
                    describe(&refusal.issues)
                ));
            }
            Err(e) => return error_text(format!("{}: {e}", hark_core::model::item::NOT_ANSWERED)),
        };
        let Some(outcome) = self.wait(&mut call, context).await else {
            return error_text(format!(
                "{} (cancelled by the client)",
                hark_core::model::item::NOT_ANSWERED
            ));
        };
        match outcome {
            Ok(Outcome::Answered(resolution)) => CallToolResult::success(vec![ContentBlock::text(
                answered_json(&resolution).to_string(),
            )]),
            Ok(other) => error_text(other.unanswered_message().unwrap_or_default()),
            Err(e) => error_text(format!("{} ({e})", hark_core::model::item::NOT_ANSWERED)),
        }
    }

    /// Waits for a pending call's outcome, with progress notifications;
    /// `None` when the client cancelled the call (the item is cancelled too).
    async fn wait(
        &self,
        call: &mut Call,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<Outcome, ClientError>> {
        let progress_token = context.meta.get_progress_token();
        // The first progress note is due one interval from now (a plain
        // `interval` would tick at once and delay a quick answer).
        let every = self.settings.progress_interval;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let started = tokio::time::Instant::now();
        loop {
            tokio::select! {
                outcome = call.outcome() => return Some(outcome),
                () = context.ct.cancelled() => {
                    // The client gave up on the call: cancel the item, then hang up.
                    let _ = call.cancel().await;
                    return None;
                }
                _ = ticker.tick(), if progress_token.is_some() => {
                    let waited = started.elapsed();
                    let left = call.timeout.saturating_sub(waited).as_secs();
                    let Some(token) = progress_token.clone() else { continue };
                    let note = ProgressNotificationParam::new(token, waited.as_secs_f64())
                        .with_total(call.timeout.as_secs_f64())
                        .with_message(format!("waiting for the operator ({left} s left)"));
                    if let Err(e) = context.peer.notify_progress(note).await {
                        tracing::debug!("progress notification failed: {e}");
                    }
                }
            }
        }
    }

    /// The `approve` tool: Claude Code's permission prompt for a read-only
    /// agent. Read-only steps pass here; anything else goes to the operator
    /// (or a grant); nobody attached means deny. The result is never a tool
    /// error: it is the JSON Claude Code reads, allow or deny.
    async fn approve(&self, args: Value, context: &RequestContext<RoleServer>) -> CallToolResult {
        let Some(tool_name) = args.get("tool_name").and_then(Value::as_str) else {
            return error_text(
                "invalid approve call: `tool_name` (the tool the agent wants to use) is required",
            );
        };
        let input = args.get("input").cloned().unwrap_or_else(|| json!({}));
        let verdict = |allow: bool, message: &str| {
            CallToolResult::success(vec![ContentBlock::text(permission_result(
                allow, &input, message,
            ))])
        };
        // The daemon classifies the call (its policy, its grants); this
        // server's own copy of the policy only decides when nobody is
        // attached, so read-only steps still pass and every write is denied.
        let frame = ClientFrame::Approve {
            caller: self.caller(context),
            tool_name: tool_name.to_owned(),
            input: input.clone(),
        };
        let mut call = match Call::start_any(&self.settings.socket, &frame).await {
            Ok(Started::Pending(call)) => call,
            Ok(Started::Decided { allow, .. }) => return verdict(allow, DENIED),
            Err(ClientError::Unreachable { .. }) => {
                let defaults;
                let policy = match &self.settings.policy {
                    Some(policy) => policy,
                    None => {
                        defaults = Policy::default();
                        &defaults
                    }
                };
                return match policy.classify(tool_name, &input) {
                    Class::ReadOnly => verdict(true, ""),
                    Class::Write(approval) => {
                        let session = self.settings.session_id.as_str();
                        trace::write_mode(&approval, session, session, None, "headless");
                        verdict(false, HEADLESS)
                    }
                };
            }
            Err(e) => return verdict(false, &format!("{NOT_APPROVED} ({e})")),
        };
        match self.wait(&mut call, context).await {
            Some(Ok(Outcome::Approved { .. })) => verdict(true, ""),
            Some(Ok(Outcome::Denied)) => verdict(false, DENIED),
            Some(Ok(other)) => verdict(
                false,
                &format!(
                    "{NOT_APPROVED}: {}",
                    other.unanswered_message().unwrap_or_default()
                ),
            ),
            Some(Err(e)) => verdict(false, &format!("{NOT_APPROVED} ({e})")),
            None => verdict(false, &format!("{NOT_APPROVED} (cancelled by the client)")),
        }
    }

    /// Who is asking (the agent process, and the MCP client's name), in
    /// which session, and for how long.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        let mut caller = base_caller(&self.settings);
        caller.asker.client = context
            .peer
            .peer_info()
            .map(|info| format!("{} {}", info.client_info.name, info.client_info.version));
        // Set by the agent host, not the model: the call of a tool use
        // whose hook asked already gets that item's outcome.
        caller.tool_use_id = context
            .meta
            .get(TOOL_USE_META)
            .and_then(Value::as_str)
            .map(str::to_owned);
        caller
    }
}

/// Who is asking (the agent process), in which session, for how long.
fn base_caller(settings: &McpSettings) -> Caller {
    Caller {
        session_id: Some(settings.session_id.clone()),
        asker: settings.asker.clone(),
        timeout_secs: settings.timeout.map(|t| t.as_secs_f64()),
        ..Caller::default()
    }
}

/// Why a write was refused, as the agent reads it.
pub(crate) const DENIED: &str = "The operator denied this write: you are read-only. Do not retry it; \
continue without writing and report what you would have changed.";
const HEADLESS: &str = "You are running read-only and no operator is attached to approve writes \
(hark is not running), so this step was not taken. Continue without writing and report what you \
would have changed.";
pub(crate) const NOT_APPROVED: &str =
    "This write was not approved, so it was not taken (silence is not consent)";

/// The tool's result for an answered call, in AskUserQuestion's shape:
/// `{"answers":…}`, and `"annotations"` only when there are any.
fn answered_json(resolution: &hark_core::model::resolve::Resolution) -> Value {
    let mut result = json!({ "answers": resolution.answers });
    if !resolution.annotations.is_empty() {
        result["annotations"] = json!(resolution.annotations);
    }
    result
}

fn error_text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// Serves `server` over MCP on stdin/stdout until the client closes it.
async fn serve_stdio(
    server: impl ServerHandler,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service = server.serve(rmcp::transport::io::stdio_pipes()).await?;
    service.waiting().await?;
    Ok(())
}

/// A server of tools named `name` (this build's version), with its
/// instructions for the client.
fn tools_server(name: &str, instructions: &str) -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(rmcp::model::Implementation::new(
            name,
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(instructions)
}

impl ServerHandler for OperatorServer {
    fn get_info(&self) -> ServerConfig {
        tools_server(
            SERVER_NAME,
            "Ask the human operator with the `ask` tool when a decision is theirs; never guess at it.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    /// A `tools/call` whose params rmcp cannot read as a call (arguments
    /// that are an array, a string, a number) arrives here, as any request
    /// it does not know. The agent gets a tool error saying what is wrong
    /// with its call, as for any other malformed call, rather than
    /// JSON-RPC's "method not found" for a method this server has.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method != "tools/call" {
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let params = request.params.unwrap_or(Value::Null);
        let text = match (params.get("name"), params.get("arguments")) {
            (Some(Value::String(_)), Some(arguments)) => format!(
                "the call's arguments must be an object (`{{\"questions\": [...]}}`), not {}",
                kind(arguments)
            ),
            _ => format!(
                "a tools/call takes {{\"name\": TOOL, \"arguments\": {{...}}}}, not {}",
                kind(&params)
            ),
        };
        serde_json::to_value(error_text(text))
            .map(CustomResult)
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            TOOL_NAME => Ok(self.ask(args, &context).await.into()),
            APPROVE_TOOL if self.settings.approvals => {
                Ok(self.approve(args, &context).await.into())
            }
            other => {
                let names: Vec<String> = self.tools().iter().map(|t| t.name.to_string()).collect();
                Err(McpError::invalid_params(
                    format!(
                        "unknown tool {other:?}; this server has {}",
                        names.join(", ")
                    ),
                    None,
                ))
            }
        }
    }
}

/// AskUserQuestion's input schema, verbatim, plus the optional `default`
/// (required on every question under strict defaults). Extra fields are
/// allowed so a newer client's call still validates.
pub fn ask_input_schema(rules: Rules) -> JsonObject {
    let mut question_required = vec!["question", "header", "options", "multiSelect"];
    if rules.strict_defaults {
        question_required.push("default");
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "description": format!("Questions to ask the user ({MIN_QUESTIONS}-{MAX_QUESTIONS} questions)"),
                "minItems": MIN_QUESTIONS,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {
                            "type": "string",
                            "description": "The complete question to ask the user. Should be clear, specific, and end with a question mark. Question texts must be unique within a call."
                        },
                        "header": {
                            "type": "string",
                            "description": format!("Very short label displayed as a chip/tag (max {MAX_HEADER_CHARS} chars). Examples: \"Auth method\", \"Library\", \"Approach\".")
                        },
                        "options": {
                            "type": "array",
                            "description": format!("The available choices for this question. Must have {MIN_OPTIONS}-{MAX_OPTIONS} options. End the label of the option you recommend with \" (Recommended)\". The operator can always type free text instead (\"Other\")."),
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "description": "The display text for this option that the user will see and select. Should be concise (1-5 words)."
                                    },
                                    "description": {
                                        "type": "string",
                                        "description": "Explanation of what this option means or what will happen if chosen."
                                    },
                                    "preview": {
                                        "type": "string",
                                        "description": format!("Optional preview content rendered when this option is focused. Use for mockups, code snippets, or visual comparisons that help users compare options. Markdown, at most {} KiB.", MAX_PREVIEW_BYTES / 1024)
                                    }
                                },
                                "required": ["label", "description"]
                            }
                        },
                        "multiSelect": {
                            "type": "boolean",
                            "default": false,
                            "description": "Set to true to allow the user to select multiple options instead of just one. The answer is then an array of labels."
                        },
                        "default": {
                            "description": "The pre-picked answer: an option label, or an array of labels for multiSelect. Taken when the operator confirms without choosing.",
                            "anyOf": [
                                {"type": "string"},
                                {"type": "array", "items": {"type": "string"}}
                            ]
                        }
                    },
                    "required": question_required
                }
            }
        },
        "required": ["questions"]
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// What Claude Code sends its permission prompt tool.
pub fn approve_input_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "properties": {
            "tool_name": {"type": "string", "description": "The tool the agent wants to use."},
            "input": {"type": "object", "description": "The input it wants to call the tool with."},
            "tool_use_id": {"type": "string", "description": "The id of the tool use."}
        },
        "required": ["tool_name", "input"]
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The default interval between progress notifications while waiting: well
/// under the 60 s some hosts allow a silent tool call.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(15);

impl McpSettings {
    /// Settings for a server spawned by an agent: `HARK_ASK_SOCK` (else the
    /// app socket), `HARK_SESSION_ID` (else one session per server),
    /// `HARK_ASK_TIMEOUT` seconds, `HARK_PROGRESS_INTERVAL_MS`, the config's rules.
    pub fn from_env(
        config: &hark_core::config::Config,
        approvals: bool,
    ) -> Result<McpSettings, hark_core::bridge::socket::SocketError> {
        McpSettings::from_env_with(config.rules(), Some(config.approvals.clone()), approvals)
    }

    /// [`McpSettings::from_env`] with the config's rules and policy given
    /// (`None`: the gate's defaults, built when first needed).
    pub(crate) fn from_env_with(
        rules: Rules,
        policy: Option<Policy>,
        approvals: bool,
    ) -> Result<McpSettings, hark_core::bridge::socket::SocketError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let socket = match var(env::ASK_SOCK) {
            Some(path) => PathBuf::from(path),
            None => hark_core::bridge::socket::app_socket_path()?,
        };
        let parent = hark_core::platform::parent_pid();
        Ok(McpSettings {
            socket,
            session_id: SessionId::from(
                var(env::SESSION_ID).unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            ),
            timeout: var(env::ASK_TIMEOUT)
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64),
            rules,
            progress_interval: var(env::PROGRESS_INTERVAL_MS)
                .and_then(|s| s.parse().ok())
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_PROGRESS_INTERVAL),
            approvals,
            policy,
            asker: Asker {
                pid: Some(parent),
                cwd: std::env::current_dir()
                    .ok()
                    .map(|p| p.display().to_string()),
                command: command_line(parent),
                client: None,
                sub_agent: None,
                confined: false,
                host: None,
            },
        })
    }
}

/// A process's command line, where the platform tells it.
fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}
