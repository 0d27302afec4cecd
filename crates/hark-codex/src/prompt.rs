//! The app-server's approval prompts, read as the approvals hark files,
//! and the operator's verdict written back as each prompt's answer
//! (the schemas of `codex app-server generate-json-schema`, 0.171.0).

use hark_core::model::approval::Scope;
use serde_json::{Value, json};

/// A command to run, a patch to apply, or an MCP tool to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Command,
    FileChange,
    McpTool,
}

/// One prompt as the operator is asked it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub kind: Kind,
    /// The Codex thread (the session the item is filed under).
    pub thread: String,
    pub cwd: Option<String>,
    /// What the call is, as the inbox names tools (`Bash`,
    /// `apply_patch`, `mcp__server__tool`).
    pub tool_name: String,
    pub input: Value,
}

/// What the thread's earlier events told about a prompt's subject.
pub trait Known {
    /// The working directory of `thread`, once resumed.
    fn cwd(&self, thread: &str) -> Option<String>;
    /// The changes of file-change item `item`, from its `item/started`.
    fn changes(&self, item: &str) -> Option<Value>;
}

impl Prompt {
    /// The prompt a server request is, or `None` for one hark leaves to
    /// the terminal (a form an MCP server asks, a question, a permission
    /// profile).
    pub fn read(method: &str, params: &Value, known: &impl Known) -> Option<Prompt> {
        let thread = params["threadId"].as_str()?.to_owned();
        let text = |key: &str| params[key].as_str().map(str::to_owned);
        let reason = text("reason");
        let (kind, tool_name, input, cwd) = match method {
            "item/commandExecution/requestApproval" => {
                let command = shown_command(params)?;
                let mut input = json!({"command": command});
                if let Some(reason) = reason {
                    input["description"] = json!(reason);
                }
                (Kind::Command, "Bash".to_owned(), input, text("cwd"))
            }
            "item/fileChange/requestApproval" => {
                let mut input = json!({});
                if let Some(changes) = params["itemId"].as_str().and_then(|i| known.changes(i)) {
                    input["changes"] = changes;
                }
                if let Some(reason) = reason {
                    input["reason"] = json!(reason);
                }
                if let Some(root) = text("grantRoot") {
                    input["grant_root"] = json!(root);
                }
                (Kind::FileChange, "apply_patch".to_owned(), input, None)
            }
            "mcpServer/elicitation/request"
                if params["_meta"]["codex_approval_kind"] == "mcp_tool_call" =>
            {
                let server = params["serverName"].as_str()?;
                let tool = params["_meta"]["tool_name"].as_str()?;
                let input = match &params["_meta"]["tool_params"] {
                    Value::Null => json!({}),
                    given => given.clone(),
                };
                (Kind::McpTool, format!("mcp__{server}__{tool}"), input, None)
            }
            _ => return None,
        };
        let cwd = cwd.or_else(|| known.cwd(&thread));
        Some(Prompt {
            kind,
            thread,
            cwd,
            tool_name,
            input,
        })
    }

    /// The prompt's answer for the operator's allow; a session's scope
    /// is Codex's "for this session" where the prompt has one.
    pub fn allowed(&self, scope: Option<Scope>) -> Value {
        match (self.kind, scope) {
            (Kind::McpTool, _) => json!({"action": "accept", "content": {}}),
            (_, Some(Scope::Session)) => json!({"decision": "acceptForSession"}),
            _ => json!({"decision": "accept"}),
        }
    }

    /// The answer for the operator's deny: Codex tells the model it was
    /// rejected, and the turn goes on (measured).
    pub fn denied(&self) -> Value {
        match self.kind {
            Kind::McpTool => json!({"action": "decline"}),
            _ => json!({"decision": "decline"}),
        }
    }
}

/// The command as the person at the terminal reads it: Codex's parsed
/// action when there is one (`touch x`), not its shell wrapper
/// (`/bin/bash -lc 'touch x'`).
fn shown_command(params: &Value) -> Option<String> {
    let actions = params["commandActions"].as_array();
    match actions.map(Vec::as_slice) {
        Some([one]) if one["command"].is_string() => one["command"].as_str().map(str::to_owned),
        _ => params["command"].as_str().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Known for Nothing {
        fn cwd(&self, _: &str) -> Option<String> {
            Some("/thread/cwd".into())
        }
        fn changes(&self, item: &str) -> Option<Value> {
            (item == "call_1").then(|| json!([{"path": "a.rs", "diff": "+x"}]))
        }
    }

    #[test]
    fn a_command_prompt_is_a_bash_approval_of_its_parsed_command() {
        // As 0.171.0 sent it (docs/src/agents/codex-interactive.md).
        let params = json!({"kind": "command", "threadId": "t1", "turnId": "u1", "itemId": "call_0",
            "reason": "scripted: touch outside the workspace",
            "command": "/bin/bash -lc 'touch /var/tmp/out/x'", "cwd": "/proj",
            "commandActions": [{"type": "unknown", "command": "touch /var/tmp/out/x"}]});
        let prompt =
            Prompt::read("item/commandExecution/requestApproval", &params, &Nothing).unwrap();
        assert_eq!(prompt.tool_name, "Bash");
        assert_eq!(prompt.thread, "t1");
        assert_eq!(prompt.cwd.as_deref(), Some("/proj"));
        assert_eq!(prompt.input["command"], "touch /var/tmp/out/x");
        assert_eq!(
            prompt.input["description"],
            "scripted: touch outside the workspace"
        );
        assert_eq!(prompt.allowed(None), json!({"decision": "accept"}));
        assert_eq!(
            prompt.allowed(Some(Scope::Session)),
            json!({"decision": "acceptForSession"})
        );
        assert_eq!(prompt.denied(), json!({"decision": "decline"}));
    }

    #[test]
    fn a_patch_carries_the_changes_its_item_announced() {
        let params = json!({"threadId": "t1", "turnId": "u1", "itemId": "call_1", "reason": "r"});
        let prompt = Prompt::read("item/fileChange/requestApproval", &params, &Nothing).unwrap();
        assert_eq!(prompt.kind, Kind::FileChange);
        assert_eq!(prompt.input["changes"][0]["path"], "a.rs");
        assert_eq!(prompt.cwd.as_deref(), Some("/thread/cwd"));
    }

    #[test]
    fn an_mcp_tool_approval_is_filed_and_a_servers_own_form_is_left_to_the_terminal() {
        let approval = json!({"threadId": "t1", "serverName": "probe", "mode": "form",
            "message": "Allow the probe MCP server to run tool \"pick\"?", "requestedSchema": {},
            "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_name": "pick", "tool_params": {"n": 1}}});
        let prompt = Prompt::read("mcpServer/elicitation/request", &approval, &Nothing).unwrap();
        assert_eq!(prompt.tool_name, "mcp__probe__pick");
        assert_eq!(prompt.input, json!({"n": 1}));
        assert_eq!(prompt.allowed(None)["action"], "accept");
        assert_eq!(prompt.denied(), json!({"action": "decline"}));
        let form = json!({"threadId": "t1", "serverName": "probe", "mode": "form",
            "message": "Which database?", "requestedSchema": {}, "_meta": null});
        assert_eq!(
            Prompt::read("mcpServer/elicitation/request", &form, &Nothing),
            None
        );
        assert_eq!(
            Prompt::read("item/tool/requestUserInput", &form, &Nothing),
            None
        );
    }
}
