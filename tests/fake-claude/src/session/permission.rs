//! Whether a tool use runs, as Claude Code decides it in `-p` mode: the
//! hooks' decision, `--allowedTools`, the `--permission-prompt-tool`; and
//! what an allowed tool does.

use fake_common::mcp::{self, Server};
use rmcp::ServiceError;
use rmcp::model::{CallToolResult, RequestMetaObject};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::{ASK_TOOL, Session};
use crate::hooks::Decision;
use crate::message;
use crate::saved::ToolUse;

/// Why a tool use did not happen: the tool result the model is given says
/// it (the permission refusals as Claude Code words them).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("Claude requested permissions to use {name}, but you haven't granted it yet.")]
    NotGranted { name: String },
    #[error("bad --permission-prompt-tool {tool}")]
    BadPromptTool { tool: String },
    #[error("no MCP server {server} for the permission prompt")]
    NoPromptServer { server: String },
    #[error("permission prompt failed")]
    PromptFailed(#[source] ServiceError),
    #[error("permission prompt returned no verdict: {text}")]
    NoVerdict { text: String },
    /// The prompt tool said no; its message.
    #[error("{message}")]
    Denied { message: String },
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("old_string not found in {path}")]
    OldStringNotFound { path: String },
}

impl Session {
    /// What a hook's `ask` comes to in `-p` mode: the permission prompt
    /// tool's verdict, or a refusal with the hook's reason.
    async fn ask_permission(&self, tool_use: &ToolUse, reason: String) -> Result<(), Refused> {
        match self.args.permission_prompt_tool.clone() {
            Some(prompt_tool) => self.permission(&prompt_tool, tool_use).await,
            None if reason.is_empty() => Err(Refused::NotGranted {
                name: tool_use.name.clone(),
            }),
            None => Err(Refused::Denied { message: reason }),
        }
    }

    /// Calls `mcp__operator__ask` as the model would, with the CLI's checks.
    pub(super) async fn ask(&mut self, tool_use: &ToolUse, decision: Decision) -> (String, bool) {
        let name = ASK_TOOL;
        if !self.tool_names.iter().any(|t| t == name) {
            return (format!("No such tool available: {name}"), true);
        }
        let verdict = match decision {
            Decision::Allow => Ok(()),
            Decision::Ask(reason) => self.ask_permission(tool_use, reason).await,
            _ if self.args.allowed.iter().any(|t| t == name) => Ok(()),
            _ => Err(Refused::NotGranted {
                name: name.to_owned(),
            }),
        };
        if let Err(refused) = verdict {
            return (message(&refused), true);
        }
        let server = &self.servers["operator"];
        match call_mcp(server, "ask", tool_use.input.clone(), &tool_use.id).await {
            Ok(result) => (mcp::text(&result), result.is_error == Some(true)),
            Err(e) => (format!("MCP error: {e}"), true),
        }
    }

    /// Uses a tool as the model would, asking the permission prompt tool
    /// first where Claude Code would.
    pub(super) async fn tool(&mut self, tool_use: &ToolUse, decision: Decision) -> (String, bool) {
        let name = tool_use.name.as_str();
        let needs_permission = !["Read", "Glob", "Grep", "LS"].contains(&name)
            && !self.args.allowed.iter().any(|t| t == name);
        let verdict = match decision {
            Decision::Allow => Ok(()),
            Decision::Ask(reason) => self.ask_permission(tool_use, reason).await,
            _ if !needs_permission => Ok(()),
            _ => match self.args.permission_prompt_tool.clone() {
                Some(prompt_tool) => self.permission(&prompt_tool, tool_use).await,
                None => Err(Refused::NotGranted {
                    name: name.to_owned(),
                }),
            },
        };
        match verdict.and_then(|()| perform(name, &tool_use.input)) {
            Ok(()) => (format!("performed {name}"), false),
            Err(refused) => (message(&refused), true),
        }
    }

    /// Asks the permission prompt tool (`mcp__SERVER__TOOL`) about a call.
    async fn permission(&self, prompt_tool: &str, tool_use: &ToolUse) -> Result<(), Refused> {
        let mut parts = prompt_tool.splitn(3, "__");
        let (Some("mcp"), Some(server), Some(tool)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::BadPromptTool {
                tool: prompt_tool.to_owned(),
            });
        };
        let Some(server) = self.servers.get(server) else {
            return Err(Refused::NoPromptServer {
                server: server.to_owned(),
            });
        };
        let arguments = json!({"tool_name": tool_use.name, "input": tool_use.input,
            "tool_use_id": tool_use.id});
        let result = call_mcp(server, tool, arguments, &tool_use.id)
            .await
            .map_err(Refused::PromptFailed)?;
        let text = mcp::text(&result);
        let Ok(verdict) = serde_json::from_str::<Value>(&text) else {
            return Err(Refused::NoVerdict { text });
        };
        match verdict["behavior"].as_str() {
            Some("allow") => Ok(()),
            _ => Err(Refused::Denied {
                message: verdict["message"].as_str().unwrap_or("denied").to_owned(),
            }),
        }
    }
}

/// Calls `tool` on `server` as Claude Code does: `_meta` carries the tool
/// use's id (`claudecode/toolUseId`) beside rmcp's `progressToken`.
async fn call_mcp(
    server: &Server,
    tool: &str,
    arguments: Value,
    use_id: &str,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        unreachable!("tool arguments are an object")
    };
    let mut meta = RequestMetaObject::new();
    meta.0
        .0
        .insert("claudecode/toolUseId".to_owned(), json!(use_id));
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(meta);
    mcp::call(server, tool, arguments, options).await
}

/// What an allowed tool does: `Write` and `Edit` change the file for real.
fn perform(name: &str, input: &Value) -> Result<(), Refused> {
    let field = |k: &str| input[k].as_str().unwrap_or_default();
    let path = field("file_path");
    let write = |text: &str| {
        std::fs::write(path, text).map_err(|source| Refused::Write {
            path: path.to_owned(),
            source,
        })
    };
    match name {
        "Write" => write(field("content")),
        "Edit" => {
            let text = std::fs::read_to_string(path).map_err(|source| Refused::Read {
                path: path.to_owned(),
                source,
            })?;
            if !text.contains(field("old_string")) {
                return Err(Refused::OldStringNotFound {
                    path: path.to_owned(),
                });
            }
            write(&text.replacen(field("old_string"), field("new_string"), 1))
        }
        _ => Ok(()),
    }
}
