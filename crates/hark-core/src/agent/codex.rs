//! The Codex CLI (`codex exec`): the `-c key=value` overrides that attach
//! hark's `operator` server without touching the user's config (measured on
//! Codex 0.171.0; issue 16):
//! - Codex passes an MCP server only a filtered environment (HOME, PATH,
//!   LANG, SHELL, TERM and a few CA variables), so the variables hark's
//!   server reads are named in `env_vars`;
//! - `exec` runs with approval `never`, and an MCP tool call without
//!   `default_tools_approval_mode = "approve"` fails;
//! - a call is cut at `tool_timeout_sec` (default 300 s) whatever progress
//!   it reports, so it is set above hark's bounded wait: the model then
//!   reads hark's own not-answered text, not Codex's timeout;
//! - `required = true` makes `exec` fail when the server cannot start.
//!
//! [`compose`] puts them, with the instructions (`developer_instructions`)
//! and a read-only run's `--sandbox read-only`, into `codex exec`'s own
//! command line.

use std::path::Path;
use std::time::Duration;

use super::{Attached, CUT_MARGIN, Composed, SERVER, UserCommand, Verb};

/// The variables hark's MCP server reads, which Codex would otherwise not
/// pass it (`XDG_RUNTIME_DIR` holds the default socket).
const ENV_VARS: &[&str] = &[
    crate::env::SOCKET,
    crate::env::ASK_SOCK,
    crate::env::SESSION_ID,
    crate::env::ASK_TIMEOUT,
    crate::env::PROGRESS_INTERVAL_MS,
    crate::env::DATA_DIR,
    crate::env::CONFIG,
    crate::env::LOG,
    "XDG_RUNTIME_DIR",
];

/// The `key=value` overrides (each for a `-c`) that attach `hark`'s
/// `operator` server to `codex exec`, for a bounded wait of `ask_timeout`.
pub fn overrides(hark: &Path, ask_timeout: Duration) -> Vec<String> {
    let key = |name: &str| format!("mcp_servers.{SERVER}.{name}");
    let text = |value: &str| toml::Value::String(value.to_owned()).to_string();
    let list = |values: &[&str]| {
        toml::Value::Array(
            values
                .iter()
                .map(|v| toml::Value::String((*v).to_owned()))
                .collect(),
        )
        .to_string()
    };
    let cut = (ask_timeout + CUT_MARGIN).as_secs();
    vec![
        format!("{}={}", key("command"), text(&hark.display().to_string())),
        format!("{}={}", key("args"), list(&["mcp-operator-ask"])),
        format!("{}={}", key("env_vars"), list(ENV_VARS)),
        format!("{}={}", key("default_tools_approval_mode"), text("approve")),
        format!("{}=true", key("required")),
        format!("{}={cut}", key("tool_timeout_sec")),
    ]
}

/// The clause telling a read-only Codex how its writes are held: by its
/// own sandbox, with no operator to approve one.
pub const READ_ONLY_CLAUSE: &str = "You are running read-only: the sandbox refuses every write and \
network access. Do not try to work around it; continue without writing and report what you would have \
changed.";

/// `--wrap` given a Codex command line that is not `codex exec`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hark attaches to Codex's non-interactive mode: the command line must be `codex exec …`")]
pub struct NotExec;

/// Where `exec` (or its alias `e`) is in a Codex command line's arguments.
fn exec_at(args: &[String]) -> Option<usize> {
    args.iter().position(|a| a == "exec" || a == "e")
}

/// Checks that a `--wrap` command line runs `codex exec`.
pub fn check_wrapped(user: &UserCommand) -> Result<(), NotExec> {
    exec_at(&user.rest).map(|_| ()).ok_or(NotExec)
}

/// The command line `hark run` starts from: `AGENT exec --json -- PROMPT`,
/// or to go on with a thread, `AGENT exec resume --json -- THREAD PROMPT`.
pub fn base_command(agent: &Path, prompt: Option<&str>, resume: Option<&str>) -> UserCommand {
    let mut rest = vec!["exec".to_owned()];
    if resume.is_some() {
        rest.push("resume".to_owned());
    }
    rest.push("--json".to_owned());
    rest.push("--".to_owned());
    rest.extend(resume.map(str::to_owned));
    rest.extend(prompt.map(str::to_owned));
    UserCommand {
        program: agent.as_os_str().to_owned(),
        rest,
        ..UserCommand::default()
    }
}

/// The user's `-c` overrides hark sets itself, taken out so that its own
/// hold (`-c` is read left to right, and the last of a key wins).
fn ours(value: &str) -> bool {
    value.starts_with(&format!("mcp_servers.{SERVER}."))
        || value.starts_with("developer_instructions=")
}

/// Flags that would loosen a read-only run's sandbox, with whether each
/// takes a value.
const LOOSENING: &[(&str, bool)] = &[
    ("-s", true),
    ("--sandbox", true),
    ("--add-dir", true),
    ("--full-auto", false),
    ("--approve-for-me", false),
    ("--dangerously-bypass-approvals-and-sandbox", false),
    ("--yolo", false),
];

/// Whether `arg` is `flag`: `Some(None)` when its value is the next word,
/// `Some(Some(value))` when it is in the word (`--flag=V`, `-fV`, `-f=V`).
fn flag_word<'a>(arg: &'a str, flag: &str) -> Option<Option<&'a str>> {
    if arg == flag {
        return Some(None);
    }
    let rest = arg.strip_prefix(flag)?;
    match rest.strip_prefix('=') {
        Some(value) => Some(Some(value)),
        // Only a short flag takes its value joined to it.
        None if flag.len() == 2 => Some(Some(rest)),
        None => None,
    }
}

/// The user's arguments less what hark sets (see [`ours`], and for a
/// read-only run [`LOOSENING`]).
fn without_ours(args: Vec<String>, read_only: bool) -> Vec<String> {
    let mut kept = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        // Past `--` everything is the prompt's.
        if arg == "--" {
            kept.push(arg);
            kept.extend(args.by_ref());
            break;
        }
        if let Some(inline) = ["-c", "--config"].iter().find_map(|f| flag_word(&arg, f)) {
            let inline = inline.map(str::to_owned);
            let value = inline.clone().or_else(|| args.next());
            match value {
                Some(value) if ours(&value) => {}
                Some(value) if inline.is_none() => kept.extend([arg, value]),
                _ => kept.push(arg),
            }
            continue;
        }
        let loosening = LOOSENING.iter().find_map(|(flag, takes)| {
            flag_word(&arg, flag).map(|inline| inline.is_none() && *takes)
        });
        match loosening {
            Some(value_follows) if read_only => {
                if value_follows {
                    args.next();
                }
            }
            _ => kept.push(arg),
        }
    }
    kept
}

/// Composes `codex exec`'s command line: the user's (or [`base_command`]'s)
/// with, right after `exec`, the overrides that attach hark's server when an
/// operator is, the instructions for an agent that can ask or cannot, and
/// for a read-only run `--sandbox read-only` (Codex's own sandbox: no
/// operator approves a write: docs/src/agents/codex.md).
pub fn compose(
    user: UserCommand,
    verb: Verb,
    attached: Option<&Attached>,
    read_only: bool,
) -> Composed {
    let mut args = without_ours(user.rest, read_only);
    let (mut clause, env) = match attached {
        Some(bridge) => (super::attached_clause(verb), super::bridge_env(bridge)),
        None => (super::headless_clause(verb), Default::default()),
    };
    let mut added = Vec::new();
    if let Some(bridge) = attached {
        for value in overrides(&bridge.hark, bridge.longest_wait) {
            added.extend(["-c".to_owned(), value]);
        }
    }
    if read_only {
        clause = format!("{clause} {READ_ONLY_CLAUSE}");
        added.extend(["--sandbox".to_owned(), "read-only".to_owned()]);
    }
    let instructions = toml::Value::String(clause).to_string();
    added.extend([
        "-c".to_owned(),
        format!("developer_instructions={instructions}"),
    ]);
    let at = exec_at(&args).map_or(0, |at| at + 1);
    args.splice(at..at, added);
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
    fn the_overrides_are_toml_values_and_cut_above_the_wait() {
        let found = overrides(Path::new("/opt/my \"hark\"/hark"), Duration::from_secs(300));
        let parsed: Vec<(String, toml::Value)> = found
            .iter()
            .map(|o| {
                let (key, value) = o.split_once('=').unwrap();
                let table: toml::Table = format!("v = {value}").parse().unwrap();
                (key.to_owned(), table["v"].clone())
            })
            .collect();
        assert_eq!(parsed[0].0, "mcp_servers.operator.command");
        assert_eq!(parsed[0].1.as_str(), Some("/opt/my \"hark\"/hark"));
        assert_eq!(parsed[2].1.as_array().unwrap().len(), ENV_VARS.len());
        assert_eq!(parsed[3].1.as_str(), Some("approve"));
        assert_eq!(parsed[5].1.as_integer(), Some(360));
    }
}
