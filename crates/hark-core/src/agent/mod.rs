//! Composing an agent's command line (SPEC §7): `claude -p` (or `codex
//! exec`, [`codex`], `opencode run`, [`opencode`], or `gemini -p`,
//! [`gemini`]) with the bridge attached exactly when someone can answer.
//!
//! Facts about the real Claude Code CLI this respects: in `-p` mode an MCP
//! tool not named in `--allowedTools` is denied; `--output-format
//! stream-json` requires `--verbose`; the tool named by
//! `--permission-prompt-tool` is hidden from the model, so it is never `ask`;
//! hosts may cut a silent tool call, so `MCP_TOOL_TIMEOUT` is set above the
//! bounded wait.
//!
//! A read-only run also turns on Claude Code's own Bash sandboxing
//! ([`sandbox`]), so that a command the gate lets through unasked
//! still cannot write outside the working directory or reach the network.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::ids::SessionId;

pub mod clients;
pub mod codex;
pub mod gemini;
pub mod hooks;
pub mod opencode;
pub mod sandbox;
pub mod wrapped;

/// The MCP server's name: the agent sees its tool as `mcp__operator__ask`.
pub const SERVER: &str = "operator";
/// The tool the agent asks through, as Claude Code names it.
pub const ASK_TOOL: &str = "mcp__operator__ask";
/// The write-mode gate, as Claude Code names it for `--permission-prompt-tool`.
pub const APPROVE_TOOL: &str = "mcp__operator__approve";
/// The built-in that resolves empty under `-p`: always denied.
pub const BUILTIN_ASK: &str = "AskUserQuestion";

/// Which agent CLI a run starts: it decides the command line hark composes
/// and how its output is read.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Claude Code: `claude -p`, `--output-format stream-json`.
    #[default]
    Claude,
    /// The Codex CLI: `codex exec --json`.
    Codex,
    /// OpenCode: `opencode run --format json`.
    Opencode,
    /// Gemini CLI: `gemini -p`, `--output-format stream-json`.
    Gemini,
}

/// An `--agent-kind` that is neither.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent kind {0:?}: use claude, codex, opencode or gemini")]
pub struct UnknownAgentKind(String);

impl std::str::FromStr for AgentKind {
    type Err = UnknownAgentKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            AgentKind::Claude,
            AgentKind::Codex,
            AgentKind::Opencode,
            AgentKind::Gemini,
        ]
        .into_iter()
        .find(|kind| kind.name() == s)
        .ok_or_else(|| UnknownAgentKind(s.to_owned()))
    }
}

impl AgentKind {
    /// Its name on the command line and in the config.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Opencode => "opencode",
            AgentKind::Gemini => "gemini",
        }
    }

    /// The kind an executable's name says: Codex when it is `codex` (or
    /// `codex-…`, `codex.exe`), OpenCode when it is `opencode` (or
    /// `opencode.exe`, `opencode-…`), Gemini CLI when it is `gemini`,
    /// else Claude Code.
    pub fn of_program(program: &Path) -> AgentKind {
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if name.starts_with("codex") {
            AgentKind::Codex
        } else if name.starts_with("opencode") {
            AgentKind::Opencode
        } else if name.starts_with("gemini") {
            AgentKind::Gemini
        } else {
            AgentKind::Claude
        }
    }
}

/// What kind of run it is; it shapes the instructions the agent gets.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    /// Do the work.
    #[default]
    Task,
    /// Answer a question; change nothing.
    Ask,
    /// Make a decision and say why.
    Decide,
    /// A conversation: turn after turn, resuming the agent's session.
    Converse,
}

/// A `--verb` that is none of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown verb {0:?}: use task, ask, decide or converse")]
pub struct UnknownVerb(String);

impl std::str::FromStr for Verb {
    type Err = UnknownVerb;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Verb::Task, Verb::Ask, Verb::Decide, Verb::Converse]
            .into_iter()
            .find(|verb| verb.name() == s)
            .ok_or_else(|| UnknownVerb(s.to_owned()))
    }
}

/// `--wrap` with no command line after `--`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--wrap needs the agent command line after --")]
pub struct NoCommandLine;

impl Verb {
    /// Its name on the command line (`--verb`).
    pub fn name(self) -> &'static str {
        match self {
            Verb::Task => "task",
            Verb::Ask => "ask",
            Verb::Decide => "decide",
            Verb::Converse => "converse",
        }
    }

    fn instruction(self) -> &'static str {
        match self {
            Verb::Task => "Carry out the task.",
            Verb::Ask => "Answer the question; do not change any file.",
            Verb::Decide => "Make the decision asked for and state it first, with your reasons.",
            Verb::Converse => "This is a conversation with the operator; reply to each message.",
        }
    }
}

/// Where the bridge is, when an operator is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The `hark` whose `mcp-operator-ask` the agent starts.
    pub hark: PathBuf,
    /// The per-call socket the agent's `hark mcp-operator-ask` dials.
    pub socket: PathBuf,
    /// The MCP config file naming `hark mcp-operator-ask` (0600, removed after the run).
    pub mcp_config: PathBuf,
    pub session_id: SessionId,
    /// The bounded wait this run was given (`hark run --timeout`), which
    /// its MCP server and hook send with each question. Without one the
    /// daemon's own applies (its `--ask-timeout`, else its config).
    pub ask_timeout: Option<Duration>,
    /// The longest a question of this run can wait: `ask_timeout`, else
    /// the longest the daemon gives any. The agent's own cuts of a call
    /// go above it, so hark's answer, not the agent's timeout, ends it.
    pub longest_wait: Duration,
    /// The park hook's command line ([`hooks::hook_command`]), when a
    /// question nobody answers in time parks the agent rather than lets it
    /// proceed.
    pub park_hook: Option<String>,
}

/// The clause telling an attached agent how to ask.
pub fn attached_clause(verb: Verb) -> String {
    format!(
        "{} When a decision belongs to the operator (scope, trade-offs, anything you would otherwise guess), \
         ask them with the MCP tool {ASK_TOOL} (server \"operator\", tool \"ask\"): one to four multiple-choice \
         questions, each with 2-4 options, marking the option you recommend with \" (Recommended)\". \
         Use it only for decisions that are the operator's, not for things you can find out yourself. \
         If it returns an error, the operator did not answer: proceed on your own judgement.",
        verb.instruction()
    )
}

/// The clause telling a headless agent it is on its own.
pub fn headless_clause(verb: Verb) -> String {
    format!(
        "{} No operator is available to answer questions in this run: do not ask; \
         proceed on your own judgement and state the assumptions you made.",
        verb.instruction()
    )
}

/// The clause telling a read-only agent how its writes are gated.
pub const READ_ONLY_CLAUSE: &str = "You are running read-only: before any step that changes files or runs a \
command that writes, the operator is asked to approve it. If a write is denied, do not retry it; continue \
without writing and report what you would have changed.";

/// The MCP config naming `hark mcp-operator-ask`, merged into `existing`
/// servers (a server already named `operator` is replaced). With no
/// existing servers it is what `hark mcp-config` prints, for an agent a user
/// starts by hand.
///
/// With `approvals` the server also serves `approve`, for a read-only run.
pub fn mcp_config(hark: &Path, existing: BTreeMap<String, Value>, approvals: bool) -> Value {
    let mut servers = existing;
    let mut args = vec!["mcp-operator-ask"];
    if approvals {
        args.push("--approvals");
    }
    servers.insert(
        SERVER.to_owned(),
        json!({"type": "stdio", "command": hark.display().to_string(), "args": args}),
    );
    json!({ "mcpServers": servers })
}

/// What a read-only run adds to the agent's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnly {
    /// The MCP config serving `approve`, with the user's servers merged in.
    pub mcp_config: PathBuf,
    /// The agent's working directory, absolute (the sandbox reads a relative
    /// path as its own). The sandbox leaves it writable, for the writes the
    /// operator approves; with nobody attached to approve one it is made
    /// read-only too.
    pub cwd: PathBuf,
    /// The agent runs as root inside hark's confinement, where bubblewrap
    /// covers parts of `/proc` and the kernel then refuses Claude Code's own
    /// sandbox a fresh procfs: it must reuse the run's (see
    /// [`sandbox::read_only_settings`]).
    pub nested_as_root: bool,
}

/// A command line to run: program, arguments, and environment added to the
/// caller's (the agent inherits API keys, base URLs, proxies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub program: OsString,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// Flags whose values are lists, merged rather than duplicated.
const LIST_FLAGS: [(&str, &str); 3] = [
    ("--allowedTools", "--allowed-tools"),
    ("--disallowedTools", "--disallowed-tools"),
    ("--mcp-config", "--mcp-config"),
];

/// The flag carrying settings: one value, which a read-only run merges into.
const SETTINGS: &str = "--settings";

/// A user's agent command line, with the flags hark merges taken out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserCommand {
    pub program: OsString,
    /// Everything but the list flags, in order.
    pub rest: Vec<String>,
    pub allowed: Vec<String>,
    pub disallowed: Vec<String>,
    pub mcp_configs: Vec<String>,
    /// The user's `--settings` (a file or JSON; the last one, as the CLI
    /// reads only that). For a read-only run the caller replaces a file with
    /// its JSON, since the sandbox is merged into it.
    pub settings: Option<String>,
}

fn split_tools(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split([',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

impl UserCommand {
    /// Takes a command line as it is, every argument in `rest` (Codex's:
    /// hark merges no list flags into it).
    pub fn verbatim(argv: &[String]) -> Result<UserCommand, NoCommandLine> {
        let (program, args) = argv.split_first().ok_or(NoCommandLine)?;
        Ok(UserCommand {
            program: program.into(),
            rest: args.to_vec(),
            ..UserCommand::default()
        })
    }

    /// Reads `claude -p "…" [flags]`. List flags take every value up to the
    /// next flag, as the CLI does; `--flag=value` works too.
    pub fn parse(argv: &[String]) -> Result<UserCommand, NoCommandLine> {
        let (program, args) = argv.split_first().ok_or(NoCommandLine)?;
        let mut user = UserCommand {
            program: program.into(),
            ..UserCommand::default()
        };
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
                _ => (arg.as_str(), None),
            };
            if name == SETTINGS {
                let step = if inline.is_some() { 1 } else { 2 };
                user.settings = inline.or_else(|| args.get(i + 1).cloned());
                i += step;
                continue;
            }
            let Some(slot) = LIST_FLAGS
                .iter()
                .position(|(a, b)| name == *a || name == *b)
            else {
                user.rest.push(arg.clone());
                i += 1;
                continue;
            };
            let mut values: Vec<String> = inline.into_iter().collect();
            i += 1;
            if values.is_empty() {
                while i < args.len() && !args[i].starts_with('-') {
                    values.push(args[i].clone());
                    i += 1;
                }
            }
            match slot {
                0 => user
                    .allowed
                    .extend(values.iter().flat_map(|v| split_tools(v))),
                1 => user
                    .disallowed
                    .extend(values.iter().flat_map(|v| split_tools(v))),
                _ => user.mcp_configs.extend(values),
            }
        }
        Ok(user)
    }
}

/// How far above the bounded wait an agent's own cut of a tool call is
/// put, so that hark's not-answered text, not the agent's timeout, is what
/// the model reads.
pub const CUT_MARGIN: Duration = Duration::from_secs(60);

/// The variables hark's MCP server reads to reach the run's operator;
/// the bounded wait only when the run was given one.
fn bridge_env(bridge: &Attached) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        (
            crate::env::ASK_SOCK.to_owned(),
            bridge.socket.display().to_string(),
        ),
        (
            crate::env::SESSION_ID.to_owned(),
            bridge.session_id.to_string(),
        ),
    ]);
    if let Some(timeout) = bridge.ask_timeout {
        env.insert(
            crate::env::ASK_TIMEOUT.to_owned(),
            timeout.as_secs_f64().to_string(),
        );
    }
    env
}

/// Composes the command line of an agent of this kind (see [`compose`],
/// [`codex::compose`], [`opencode::compose`], which merges into this
/// process's `OPENCODE_*` variables, and [`gemini::compose`]).
pub fn compose_for(
    kind: AgentKind,
    user: UserCommand,
    verb: Verb,
    attached: Option<&Attached>,
    read_only: Option<&ReadOnly>,
) -> Composed {
    match kind {
        AgentKind::Claude => compose(user, verb, attached, read_only),
        AgentKind::Codex => codex::compose(user, verb, attached, read_only.is_some()),
        AgentKind::Opencode => opencode::compose(
            user,
            verb,
            attached,
            read_only.is_some(),
            &opencode::Inherited::from_env(),
        ),
        AgentKind::Gemini => gemini::compose(user, verb, attached, read_only.is_some()),
    }
}

/// The command line `hark run` starts an agent of this kind from (see
/// [`base_command`], [`codex::base_command`], [`opencode::base_command`]
/// and [`gemini::base_command`]).
pub fn base_command_for(
    kind: AgentKind,
    agent: &Path,
    prompt: Option<&str>,
    resume: Option<&str>,
) -> UserCommand {
    match kind {
        AgentKind::Claude => base_command(agent, prompt, resume),
        AgentKind::Codex => codex::base_command(agent, prompt, resume),
        AgentKind::Opencode => opencode::base_command(agent, prompt, resume),
        AgentKind::Gemini => gemini::base_command(agent, prompt, resume),
    }
}

/// Adds `item` unless it is there already.
fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|t| t == item) {
        list.push(item.to_owned());
    }
}

/// Composes the agent's command line. `user` is the agent and whatever the
/// user passed (for `hark run`: `claude -p PROMPT` plus output flags); the
/// bridge is attached when `attached` is given.
/// `read_only` is given for a run dispatched read-only: every write then
/// goes through the write-mode gate, and with nobody attached it is denied;
/// Bash also runs in Claude Code's sandbox ([`sandbox::read_only_settings`], merged
/// into the user's `--settings`, which must then be JSON), where with nobody
/// attached the working directory is read-only as well.
pub fn compose(
    mut user: UserCommand,
    verb: Verb,
    attached: Option<&Attached>,
    read_only: Option<&ReadOnly>,
) -> Composed {
    push_unique(&mut user.disallowed, BUILTIN_ASK);
    user.allowed.retain(|t| t != BUILTIN_ASK);
    let (clause, env) = match attached {
        Some(bridge) => {
            push_unique(&mut user.allowed, ASK_TOOL);
            // One merged config replaces the user's (its servers are in it).
            user.mcp_configs = vec![bridge.mcp_config.display().to_string()];
            let mut env = bridge_env(bridge);
            // Above the bounded wait, so the CLI never cuts the call first.
            let cutoff = bridge.longest_wait + CUT_MARGIN;
            env.insert(
                "MCP_TOOL_TIMEOUT".to_owned(),
                cutoff.as_millis().to_string(),
            );
            (attached_clause(verb), env)
        }
        None => (headless_clause(verb), BTreeMap::new()),
    };
    let mut args = user.rest;
    // The settings hark adds (merged into the user's: one `--settings`).
    let mut ours: Option<Value> = None;
    let clause = match read_only {
        Some(read_only) => {
            if attached.is_none() {
                // Served for `approve` only: nobody can answer a question.
                push_unique(&mut user.disallowed, ASK_TOOL);
            }
            user.mcp_configs = vec![read_only.mcp_config.display().to_string()];
            // One permission prompt: the gate's replaces any the user named.
            if let Some(at) = args.iter().position(|a| a == "--permission-prompt-tool") {
                args.drain(at..(at + 2).min(args.len()));
            }
            args.push("--permission-prompt-tool".into());
            args.push(APPROVE_TOOL.into());
            // Not JSON (a file the caller did not read): the sandbox alone,
            // rather than a run without it.
            let theirs = user
                .settings
                .take()
                .and_then(|s| serde_json::from_str(&s).ok());
            let mut settings = sandbox::read_only_settings(
                theirs.unwrap_or(Value::Null),
                &read_only.cwd,
                attached.is_some(),
            );
            if read_only.nested_as_root {
                sandbox::nest_as_root(&mut settings);
            }
            ours = Some(settings);
            format!("{clause} {READ_ONLY_CLAUSE}")
        }
        None => clause,
    };
    if let Some(command) = attached.and_then(|a| a.park_hook.as_deref()) {
        let base = ours.take().unwrap_or_else(|| {
            user.settings
                .take()
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or(Value::Null)
        });
        let timeout = attached.map_or(Duration::ZERO, |a| a.longest_wait);
        ours = Some(hooks::with_park_hook(
            base,
            command,
            timeout,
            read_only.is_some(),
        ));
    }
    if let Some(settings) = ours {
        args.push(SETTINGS.into());
        args.push(settings.to_string());
    } else if let Some(settings) = user.settings {
        args.push(SETTINGS.into());
        args.push(settings);
    }
    if !user.allowed.is_empty() {
        args.push("--allowedTools".into());
        args.push(user.allowed.join(","));
    }
    args.push("--disallowedTools".into());
    args.push(user.disallowed.join(","));
    if !user.mcp_configs.is_empty() {
        args.push("--mcp-config".into());
        args.extend(user.mcp_configs);
    }
    args.push("--append-system-prompt".into());
    args.push(clause);
    Composed {
        program: user.program,
        args,
        env,
    }
}

/// The command line `hark run` starts from: `AGENT -p PROMPT --output-format
/// stream-json --verbose`; resuming a paused agent (`resume` and no prompt)
/// carries out the tool use it was paused on first.
pub fn base_command(agent: &Path, prompt: Option<&str>, resume: Option<&str>) -> UserCommand {
    let mut rest = vec!["-p".to_owned()];
    rest.extend(prompt.map(str::to_owned));
    rest.extend(["--output-format", "stream-json", "--verbose"].map(String::from));
    if let Some(session) = resume {
        rest.push("--resume".to_owned());
        rest.push(session.to_owned());
    }
    UserCommand {
        program: agent.as_os_str().to_owned(),
        rest,
        ..UserCommand::default()
    }
}

#[cfg(test)]
mod tests;
