//! OpenCode (`opencode run`): what attaches hark's `operator` server
//! without touching the user's files (measured on OpenCode 1.18.33;
//! docs/src/agents/opencode.md):
//! - the variable `OPENCODE_CONFIG_CONTENT` is a config merged over the
//!   user's and the project's files, and `OPENCODE_PERMISSION` is merged
//!   into `permission` last of all: hark merges its own into whatever the
//!   user already set in them;
//! - an MCP server gets OpenCode's whole environment, so the variables
//!   hark's server reads need no naming;
//! - the model sees the tool as `operator_ask`, allowed by default, but a
//!   project can set it to `ask`, which `run` auto-rejects: it is allowed
//!   explicitly;
//! - the server's `timeout` (ms) bounds each call, and each of hark's
//!   progress notifications restarts it, so hark's bounded wait decides;
//!   it is still set above the wait;
//! - `deny` leaves a tool out of what the model is offered: a read-only
//!   run denies `edit` (OpenCode's file writes) and `bash`.
//!
//! OpenCode has no setting that adds text to its system prompt: a config's
//! `instructions` are files or URLs, and an agent's `prompt` stands in for
//! OpenCode's own. So the clause for the model is a word of the message,
//! right after `run` (OpenCode joins the message's words, quoting those
//! with a space), in the session's first turn only.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::{Attached, CUT_MARGIN, Composed, SERVER, UserCommand, Verb};

/// The variable holding a config merged over the user's files.
pub const CONFIG_CONTENT: &str = "OPENCODE_CONFIG_CONTENT";
/// The variable holding permissions merged over every config.
pub const PERMISSION: &str = "OPENCODE_PERMISSION";
/// The tool the agent asks through, as OpenCode names it (`SERVER_TOOL`).
pub const ASK_TOOL: &str = "operator_ask";

/// The clause telling a read-only OpenCode how its writes are held.
pub const READ_ONLY_CLAUSE: &str = "You are running read-only: the edit and bash tools are denied \
to you. Do not try to work around it; continue without writing and report what you would have \
changed.";

/// `--wrap` given an OpenCode command line that is not `opencode run`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "hark attaches to OpenCode's non-interactive mode: the command line must be `opencode run …`"
)]
pub struct NotRun;

/// What of the user's own environment hark merges into: their
/// `OPENCODE_CONFIG_CONTENT` and `OPENCODE_PERMISSION`, when set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inherited {
    pub config_content: Option<String>,
    pub permission: Option<String>,
}

impl Inherited {
    /// This process's.
    pub fn from_env() -> Inherited {
        Inherited {
            config_content: std::env::var(CONFIG_CONTENT).ok(),
            permission: std::env::var(PERMISSION).ok(),
        }
    }
}

/// Where `run` is in an OpenCode command line's arguments.
fn run_at(args: &[String]) -> Option<usize> {
    args.iter()
        .take_while(|a| *a != "--")
        .position(|a| a == "run")
}

/// Checks that a `--wrap` command line runs `opencode run`.
pub fn check_wrapped(user: &UserCommand) -> Result<(), NotRun> {
    run_at(&user.rest).map(|_| ()).ok_or(NotRun)
}

/// The command line `hark run` starts from: `AGENT run --format json --
/// PROMPT`, or to go on with a session, `… --session ID -- PROMPT`.
pub fn base_command(agent: &Path, prompt: Option<&str>, resume: Option<&str>) -> UserCommand {
    let mut rest = vec!["run".to_owned(), "--format".to_owned(), "json".to_owned()];
    if let Some(session) = resume {
        rest.extend(["--session".to_owned(), session.to_owned()]);
    }
    rest.push("--".to_owned());
    rest.extend(prompt.map(str::to_owned));
    UserCommand {
        program: agent.as_os_str().to_owned(),
        rest,
        ..UserCommand::default()
    }
}

/// The `mcp.operator` entry naming `hark`, cut (ms) at `cut`.
pub fn server(hark: &Path, cut: std::time::Duration) -> Value {
    json!({
        "type": "local",
        "command": [hark.display().to_string(), "mcp-operator-ask"],
        "enabled": true,
        "timeout": u64::try_from(cut.as_millis()).unwrap_or(u64::MAX),
    })
}

/// `ours` merged into `theirs`, object by object, ours winning.
fn merge(theirs: Value, ours: Value) -> Value {
    match (theirs, ours) {
        (Value::Object(mut theirs), Value::Object(ours)) => {
            for (key, value) in ours {
                let old = theirs.remove(&key).unwrap_or(Value::Null);
                theirs.insert(key, merge(old, value));
            }
            Value::Object(theirs)
        }
        (_, ours) => ours,
    }
}

/// `ours` merged into the user's JSON text. Text that is not JSON is
/// replaced: hark's settings alone, rather than a run without them.
fn merged_over(theirs: Option<&str>, ours: Value) -> String {
    let theirs = theirs
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null);
    merge(theirs, ours).to_string()
}

/// Whether the command line goes on with a session (whose first message
/// has the clause already).
fn resumes(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        ["-s", "--session", "-c", "--continue"].contains(&a.as_str()) || a.starts_with("--session=")
    })
}

/// Composes `opencode run`'s command line: the user's (or
/// [`base_command`]'s) with, in its environment, hark's server and the
/// tool allowed when an operator is attached, and for a read-only run
/// `edit` and `bash` denied; and the clause for the model as the
/// message's first word, unless the session is resumed.
pub fn compose(
    user: UserCommand,
    verb: Verb,
    attached: Option<&Attached>,
    read_only: bool,
    inherited: &Inherited,
) -> Composed {
    let mut args = user.rest;
    let (mut clause, mut env) = match attached {
        Some(bridge) => (
            super::attached_clause(verb).replace(super::ASK_TOOL, ASK_TOOL),
            super::bridge_env(bridge),
        ),
        None => (super::headless_clause(verb), BTreeMap::new()),
    };
    let mut permission = serde_json::Map::new();
    if let Some(bridge) = attached {
        let cut = bridge.longest_wait + CUT_MARGIN;
        let config = json!({"mcp": {SERVER: server(&bridge.hark, cut)}});
        env.insert(
            CONFIG_CONTENT.to_owned(),
            merged_over(inherited.config_content.as_deref(), config),
        );
        permission.insert(ASK_TOOL.to_owned(), "allow".into());
    }
    if read_only {
        clause = format!("{clause} {READ_ONLY_CLAUSE}");
        permission.insert("edit".to_owned(), "deny".into());
        permission.insert("bash".to_owned(), "deny".into());
    }
    if !permission.is_empty() {
        env.insert(
            PERMISSION.to_owned(),
            merged_over(inherited.permission.as_deref(), Value::Object(permission)),
        );
    }
    if !resumes(&args) {
        let at = run_at(&args).map_or(0, |at| at + 1);
        args.insert(at, clause);
    }
    Composed {
        program: user.program,
        args,
        env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_config_and_permissions_are_kept_under_harks() {
        let theirs =
            r#"{"model":"mock/m","mcp":{"mine":{"type":"local"},"operator":{"command":["x"]}}}"#;
        let merged: Value = serde_json::from_str(&merged_over(
            Some(theirs),
            json!({"mcp": {"operator": {"command": ["hark"]}}}),
        ))
        .unwrap();
        assert_eq!(merged["model"], "mock/m");
        assert_eq!(merged["mcp"]["mine"]["type"], "local");
        assert_eq!(merged["mcp"]["operator"]["command"], json!(["hark"]));
        let replaced = merged_over(Some("not json"), json!({"a": 1}));
        assert_eq!(replaced, r#"{"a":1}"#);
    }

    #[test]
    fn the_clause_goes_after_run_and_not_into_a_resumed_session() {
        let words = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(resumes(&words(&["run", "--session", "ses_1", "--", "go"])));
        assert!(resumes(&words(&["run", "-c", "go"])));
        assert!(!resumes(&words(&["run", "--", "--session"])));
        let user =
            UserCommand::verbatim(&words(&["opencode", "--print-logs", "run", "go"])).unwrap();
        let c = compose(user, Verb::Task, None, false, &Inherited::default());
        assert_eq!(c.args[..2], ["--print-logs", "run"]);
        assert!(c.args[2].contains("No operator is available"));
        assert_eq!(c.args[3], "go");
    }

    #[test]
    fn attached_it_gets_the_server_cut_above_the_wait_and_the_tool_allowed() {
        let bridge = Attached {
            hark: "/opt/hark/bin/hark".into(),
            socket: "/run/h/ask.sock".into(),
            mcp_config: "/run/h/mcp.json".into(),
            session_id: "s1".into(),
            ask_timeout: Some(std::time::Duration::from_secs(300)),
            longest_wait: std::time::Duration::from_secs(300),
            park_hook: None,
        };
        let inherited = Inherited {
            config_content: Some(r#"{"model":"mock/m"}"#.to_owned()),
            permission: Some(r#"{"webfetch":"deny","operator_ask":"ask"}"#.to_owned()),
        };
        let base = base_command(Path::new("opencode"), Some("-pick a db"), None);
        let c = compose(base, Verb::Task, Some(&bridge), true, &inherited);
        assert_eq!(c.args[0], "run");
        assert!(c.args[1].contains(ASK_TOOL) && c.args[1].contains("read-only"));
        assert!(!c.args[1].contains(super::super::ASK_TOOL), "{}", c.args[1]);
        assert_eq!(c.args[2..], ["--format", "json", "--", "-pick a db"]);
        let config: Value = serde_json::from_str(&c.env[CONFIG_CONTENT]).unwrap();
        assert_eq!(config["model"], "mock/m");
        let operator = &config["mcp"]["operator"];
        assert_eq!(
            operator["command"],
            json!(["/opt/hark/bin/hark", "mcp-operator-ask"])
        );
        assert_eq!(operator["timeout"], 360_000);
        let permission: Value = serde_json::from_str(&c.env[PERMISSION]).unwrap();
        assert_eq!(
            permission,
            json!({"webfetch": "deny", "operator_ask": "allow", "edit": "deny", "bash": "deny"})
        );
        assert_eq!(c.env[crate::env::ASK_SOCK], "/run/h/ask.sock");

        let headless = compose(
            base_command(Path::new("opencode"), Some("go"), Some("ses_1")),
            Verb::Task,
            None,
            false,
            &inherited,
        );
        assert!(headless.env.is_empty(), "{:?}", headless.env);
        assert_eq!(
            headless.args,
            ["run", "--format", "json", "--session", "ses_1", "--", "go"],
            "a resumed session has the clause already"
        );
    }
}
