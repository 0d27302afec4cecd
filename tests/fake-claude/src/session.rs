//! One run's session: the script followed, the model's tool uses it makes
//! (each through its `PreToolUse` hooks), and the stream-json events
//! printed.

mod permission;

use std::collections::BTreeMap;
use std::io::Write;

use fake_common::identity::Identity;
use fake_common::mcp::Server;
use fake_common::script::{exit_status, split};
use serde_json::{Value, json};

use crate::args::Args;
use crate::background::background;
use crate::hooks::{self, Decision, Outcome, PreToolUse};
use crate::saved::{self, Saved, ToolUse};

/// The operator's ask tool, as the model names it.
const ASK_TOOL: &str = "mcp__operator__ask";

/// Set in a sub-agent's environment: the id its hooks' input names.
const SUB_AGENT_ENV: &str = "FAKE_CLAUDE_SUB_AGENT";

/// A tool call in a script line: `ASK {json}` or `TOOL name {json}`.
fn call(line: &str) -> Option<(String, Value)> {
    let (command, rest) = line.trim().split_once(' ')?;
    match command {
        "ASK" => match serde_json::from_str::<Value>(rest) {
            Ok(input @ Value::Object(_)) => Some((ASK_TOOL.to_owned(), input)),
            _ => None,
        },
        "TOOL" => {
            let (name, input) = rest.split_once(' ').unwrap_or((rest, "{}"));
            Some((name.to_owned(), serde_json::from_str(input).ok()?))
        }
        _ => None,
    }
}

/// Prints one stream-json event.
pub fn emit(event: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

/// What a run holds while it follows its script.
pub struct Session {
    pub id: String,
    pub args: Args,
    pub servers: BTreeMap<String, Server>,
    pub tool_names: Vec<String>,
    pub hooks: PreToolUse,
    /// What is kept for `--resume`: the script, where it is, the deferred use.
    pub saved: Saved,
    pub last_text: String,
    pub errors: u32,
    /// The exit status `EXIT n` set.
    pub status: u8,
}

impl Session {
    /// Prints the model's tool use, with a fresh id.
    pub fn tool_use(&mut self, name: &str, input: Value) -> ToolUse {
        self.saved.uses += 1;
        // Unique on this machine, as the real CLI's are, even where every
        // agent is pid 2 of its own PID namespace.
        let me = Identity::me();
        let id = format!("toolu_fake{}_{}_{}", me.pid, me.start, self.saved.uses);
        emit(
            json!({"type": "assistant", "session_id": self.id, "message": {"content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}]}}),
        );
        ToolUse {
            id,
            name: name.to_owned(),
            input,
        }
    }

    /// Prints a tool's result, as the CLI feeds it back to the model.
    fn tool_result(&mut self, use_id: &str, text: String, is_error: bool) {
        if is_error {
            self.errors += 1;
        }
        emit(
            json!({"type": "user", "session_id": self.id, "message": {"content": [
            {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": is_error}]}}),
        );
        self.last_text = text;
    }

    /// Fires the `PreToolUse` hooks that match a tool use; the most
    /// restrictive of their decisions.
    async fn pre_tool_use(&self, tool_use: &ToolUse) -> Decision {
        let matching = self.hooks.matching(&tool_use.name);
        if matching.is_empty() {
            return Decision::Normal;
        }
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut input = json!({
            "session_id": self.id,
            "transcript_path": saved::path(&self.id),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_use.name,
            "tool_input": tool_use.input,
            "tool_use_id": tool_use.id,
        });
        let server = tool_use
            .name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"));
        if let Some((server, _)) = server {
            input["mcp_server"] = json!({"name": server});
        }
        // A sub-agent's calls name it, as the real CLI's do.
        if let Ok(agent_id) = std::env::var(SUB_AGENT_ENV) {
            input["agent_id"] = json!(agent_id);
            input["agent_type"] = json!("general-purpose");
        }
        let mut decision = Decision::Normal;
        for hook in &matching {
            match hooks::run(hook, &tool_use.name, &input).await {
                Outcome::Decided(d) => decision = decision.max(d),
                Outcome::TimedOut => emit(hooks::timed_out_event(&self.id, &tool_use.id)),
            }
        }
        decision
    }

    /// Carries out a tool use the model made: its hooks, then the tool
    /// unless they refused it; the use back if they deferred it.
    pub async fn carry_out(&mut self, tool_use: &ToolUse) -> Option<ToolUse> {
        let (text, is_error) = match self.pre_tool_use(tool_use).await {
            Decision::Defer => return Some(tool_use.clone()),
            Decision::Deny(text) => (text, true),
            decision if tool_use.name == ASK_TOOL => self.ask(tool_use, decision).await,
            decision => self.tool(tool_use, decision).await,
        };
        self.tool_result(&tool_use.id, text, is_error);
        None
    }

    /// Several tool calls in one message (`BOTH A && B`): every use is
    /// printed, then each is carried out; the first one deferred is kept.
    async fn both(&mut self, rest: &str) -> Option<ToolUse> {
        let Some(calls) = rest.split(" && ").map(call).collect::<Option<Vec<_>>>() else {
            self.last_text = format!("bad BOTH line: {rest}");
            return None;
        };
        let uses: Vec<ToolUse> = calls
            .into_iter()
            .map(|(name, input)| self.tool_use(&name, input))
            .collect();
        let mut deferred = None;
        for tool_use in &uses {
            let this = self.carry_out(tool_use).await;
            deferred = deferred.or(this);
        }
        deferred
    }

    /// Follows the script from line `self.saved.next`, one command a line;
    /// the tool use it stopped at, if a hook deferred one.
    pub async fn follow(&mut self, argv: &[String]) -> Option<ToolUse> {
        while let Some(line) = self.saved.script.get(self.saved.next).cloned() {
            self.saved.next += 1;
            let (command, rest) = split(&line);
            let deferred = match command {
                "ASK" | "TOOL" => match call(&line) {
                    Some((name, input)) => {
                        let tool_use = self.tool_use(&name, input);
                        self.carry_out(&tool_use).await
                    }
                    None => {
                        self.last_text = format!("bad {command} line: {rest}");
                        None
                    }
                },
                "BOTH" => self.both(rest).await,
                "NESTED" => {
                    self.nested(rest, argv).await;
                    None
                }
                "SAY" => {
                    emit(
                        json!({"type": "assistant", "session_id": self.id, "message": {"content": [{"type": "text", "text": rest}]}}),
                    );
                    self.last_text = rest.to_owned();
                    None
                }
                "HANG" => std::future::pending().await,
                "SHELL" => {
                    self.shell(rest).await;
                    None
                }
                "BACKGROUND" => {
                    background();
                    None
                }
                "EXIT" => {
                    self.status = exit_status(rest);
                    None
                }
                _ => {
                    let text = format!("done: {line}");
                    emit(
                        json!({"type": "assistant", "session_id": self.id, "message": {"content": [{"type": "text", "text": text}]}}),
                    );
                    self.last_text = text;
                    None
                }
            };
            if deferred.is_some() {
                return deferred;
            }
        }
        None
    }

    /// Runs `sh -c COMMAND` (Windows: `cmd /C COMMAND`) as the Bash tool
    /// of a run that allows it does (no permission asked), and reports its
    /// output as the tool's result.
    async fn shell(&mut self, command: &str) {
        let tool_use = self.tool_use("Bash", json!({"command": command}));
        #[cfg(unix)]
        let mut shell = tokio::process::Command::new("sh");
        #[cfg(unix)]
        shell.args(["-c", command]);
        #[cfg(windows)]
        let mut shell = tokio::process::Command::new("cmd");
        // cmd takes the rest of its command line as it is, quotes and all.
        #[cfg(windows)]
        shell.arg("/C").raw_arg(command);
        let output = shell.stdin(std::process::Stdio::null()).output().await;
        let (text, is_error) = match output {
            Ok(out) => (
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
                !out.status.success(),
            ),
            Err(e) => (format!("cannot run sh: {e}"), true),
        };
        self.tool_result(&tool_use.id, text, is_error);
    }

    /// Runs a sub-agent (a child of this program) that inherits the MCP
    /// config and the settings, in a session of its own; its hooks' input
    /// carries `agent_id` and `agent_type` `general-purpose`.
    async fn nested(&mut self, input: &str, argv: &[String]) {
        let mut args: Vec<String> = Vec::new();
        let mut rest = argv.iter();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-p" | "--print" => {}
                "--resume" | "-r" => {
                    rest.next();
                }
                _ if Some(arg) == self.args.prompt.as_ref() => {}
                _ => args.push(arg.clone()),
            }
        }
        args.push("-p".into());
        args.push(format!("ASK {input}"));
        let exe = std::env::current_exe().expect("own path");
        let output = tokio::process::Command::new(exe)
            .args(&args)
            .env(SUB_AGENT_ENV, format!("afake{}", std::process::id()))
            .output()
            .await;
        match output {
            Ok(out) => {
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    if let Ok(mut event) = serde_json::from_str::<Value>(line) {
                        if event["type"] == "user" {
                            self.last_text = event["message"]["content"][0]["content"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                        }
                        event["parent_tool_use_id"] = json!("toolu_task");
                        if event["type"] != "result" && event["type"] != "system" {
                            emit(event);
                        }
                    }
                }
            }
            Err(e) => self.last_text = format!("sub-agent failed: {e}"),
        }
    }

    /// The final `result` event: the turn's end, or the deferred tool use.
    pub fn result(&self, deferred: Option<&ToolUse>) -> Value {
        match deferred {
            Some(tool_use) => json!({"type": "result", "subtype": "success",
                "session_id": self.id, "is_error": false, "result": "",
                "stop_reason": "tool_deferred", "terminal_reason": "tool_deferred",
                "deferred_tool_use": tool_use.to_json(),
                "duration_ms": 5, "total_cost_usd": 0.0, "num_turns": 1}),
            None => json!({"type": "result", "subtype": "success", "session_id": self.id,
                "is_error": self.status != 0, "result": self.last_text,
                "stop_reason": "end_turn", "terminal_reason": "completed",
                "duration_ms": 5, "total_cost_usd": 0.0, "num_turns": 1}),
        }
    }
}
