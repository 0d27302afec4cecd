//! Gemini CLI (`gemini -p`): what attaches hark's `operator` server
//! without touching the user's files (measured on Gemini CLI 0.61.0;
//! docs/src/agents/gemini.md):
//! - MCP servers come only from settings files (no flag names one). The
//!   one a user could hand over, `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, is
//!   skipped unless it and every parent directory are owned by root and
//!   not writable by group or others (read in the CLI's source), which a
//!   run directory in the temp dir never is. So hark gives the CLI a home
//!   of its own, `GEMINI_CLI_HOME` = a directory in the run's (0700), whose
//!   `.gemini/settings.json` is the user's own settings with hark's server
//!   merged in, and whose other entries are links to the user's
//!   `~/.gemini` (credentials, sessions, history): a session saved in a
//!   run is the user's to resume ([`prepare_home`]);
//! - the server has `trust: true`, without which `-p` starts it but does
//!   not offer its tool; the model sees the tool as `mcp_operator_ask`;
//! - its `timeout` (ms) is a hard cut that hark's progress does not
//!   extend: it is set above the run's longest wait, plus [`CUT_MARGIN`];
//! - the CLI drops from a stdio server's environment every variable whose
//!   name holds `KEY`, `TOKEN`, `SECRET`…, and under `GITHUB_SHA` passes
//!   only an allow-list: hark's variables are named in the server's `env`;
//! - a folder not trusted makes `-p` exit 55: hark's own command line
//!   passes `--skip-trust` (which also leaves the project's
//!   `.gemini/settings.json` unread);
//! - read-only: `-p` leaves out of the model's tools every one that needs
//!   a confirmation (the shell, file writes) unless `--yolo` or
//!   `--approval-mode` says otherwise. hark never passes either, and a
//!   read-only run drops them from a wrapped command line.
//!
//! Gemini CLI has no setting that adds to its system prompt
//! (`GEMINI_SYSTEM_MD` replaces Gemini's own whole, and `GEMINI.md` files
//! are the user's memory), so the clause for the model goes before the
//! prompt, as OpenCode's does, in the session's first turn only.
//!
//! Parking is not supported: nothing in `gemini -p` pauses a call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Attached, CUT_MARGIN, Composed, SERVER, UserCommand, Verb};

/// The variable naming the home the CLI reads `.gemini/` from.
pub const HOME: &str = "GEMINI_CLI_HOME";
/// The tool the agent asks through, as Gemini CLI names it.
pub const ASK_TOOL: &str = "mcp_operator_ask";

/// The clause telling a read-only Gemini how its writes are held.
pub const READ_ONLY_CLAUSE: &str = "You are running read-only: no tool that writes files or runs \
a shell is offered to you. Do not try to work around it; continue without writing and report \
what you would have changed.";

/// `--wrap` given a Gemini command line without `-p`/`--prompt`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "hark attaches to Gemini CLI's headless mode: the command line must be `gemini -p PROMPT …`"
)]
pub struct NoPrompt;

/// Where the prompt is: the index of `--prompt=…` (`inline`) or of the
/// value after `-p`/`--prompt`.
fn prompt_at(args: &[String]) -> Option<(usize, bool)> {
    let at = args
        .iter()
        .take_while(|a| *a != "--")
        .position(|a| ["-p", "--prompt"].contains(&a.as_str()) || a.starts_with("--prompt="))?;
    match args[at].starts_with("--prompt=") {
        true => Some((at, true)),
        false => (at + 1 < args.len()).then_some((at + 1, false)),
    }
}

/// Checks that a `--wrap` command line runs `gemini -p PROMPT`.
pub fn check_wrapped(user: &UserCommand) -> Result<(), NoPrompt> {
    prompt_at(&user.rest).map(|_| ()).ok_or(NoPrompt)
}

/// The command line `hark run` starts from: `AGENT --prompt=PROMPT
/// --output-format stream-json --skip-trust`, and `--resume ID` to go on
/// with a session. The prompt is joined to its flag, so that one starting
/// with `-` is not read as a flag.
pub fn base_command(agent: &Path, prompt: Option<&str>, resume: Option<&str>) -> UserCommand {
    let mut rest = vec![
        format!("--prompt={}", prompt.unwrap_or_default()),
        "--output-format".to_owned(),
        "stream-json".to_owned(),
        "--skip-trust".to_owned(),
    ];
    if let Some(session) = resume {
        rest.extend(["--resume".to_owned(), session.to_owned()]);
    }
    UserCommand {
        program: agent.as_os_str().to_owned(),
        rest,
        ..UserCommand::default()
    }
}

/// The `mcpServers.operator` entry naming `hark`, cut (ms) at `cut`, with
/// the variables it reads named.
pub fn server(hark: &Path, cut: std::time::Duration, env: &BTreeMap<String, String>) -> Value {
    json!({
        "command": hark.display().to_string(),
        "args": ["mcp-operator-ask"],
        "env": env,
        "timeout": u64::try_from(cut.as_millis()).unwrap_or(u64::MAX),
        "trust": true,
    })
}

/// The user's settings with hark's server in `mcpServers` (one named
/// `operator` is replaced); `config` is the run's copy of hark's config.
pub fn settings(theirs: Value, bridge: &Attached, config: &Path) -> Value {
    let mut env = super::bridge_env(bridge);
    env.insert(crate::env::CONFIG.to_owned(), config.display().to_string());
    let ours = server(&bridge.hark, bridge.longest_wait + CUT_MARGIN, &env);
    let mut settings = match theirs {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    super::sandbox::object_at(&mut settings, "mcpServers").insert(SERVER.to_owned(), ours);
    Value::Object(settings)
}

/// The home the user's Gemini CLI reads: `GEMINI_CLI_HOME`, else `HOME`.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os(HOME)
        .or_else(|| std::env::var_os("HOME"))
        .map(PathBuf::from)
}

/// Makes the run's Gemini home in `dir`: `gemini-home/.gemini/` holding
/// `settings` (0600) and a link to each other entry of `user_home`'s
/// `.gemini`. Returns the settings file's path, which
/// [`Attached::mcp_config`] then names.
pub fn prepare_home(
    dir: &Path,
    user_home: Option<&Path>,
    settings: &Value,
) -> std::io::Result<PathBuf> {
    let gemini = dir.join("gemini-home").join(".gemini");
    std::fs::create_dir_all(&gemini)?;
    let theirs = user_home.map(|home| home.join(".gemini"));
    for entry in theirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
    {
        if entry.file_name() != "settings.json" {
            link(&entry.path(), &gemini.join(entry.file_name()))?;
        }
    }
    let path = gemini.join("settings.json");
    let mut file =
        crate::platform::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
            .open(&path)?;
    std::io::Write::write_all(&mut file, settings.to_string().as_bytes())?;
    Ok(path)
}

#[cfg(unix)]
fn link(original: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(original, link)
}

#[cfg(windows)]
fn link(original: &Path, link: &Path) -> std::io::Result<()> {
    match original.is_dir() {
        true => std::os::windows::fs::symlink_dir(original, link),
        false => std::os::windows::fs::symlink_file(original, link),
    }
}

/// The user's own `settings.json` in `user_home`'s `.gemini` (none: `{}`).
pub fn user_settings(user_home: Option<&Path>) -> Result<Value, UserSettings> {
    let Some(path) = user_home.map(|h| h.join(".gemini").join("settings.json")) else {
        return Ok(json!({}));
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| UserSettings::Json {
            path: path.clone(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(source) => Err(UserSettings::Read { path, source }),
    }
}

/// The user's Gemini settings, which hark's are merged into, cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum UserSettings {
    #[error("cannot read Gemini CLI's settings {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("Gemini CLI's settings {} are not plain JSON: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Whether the command line goes on with a session (whose first message
/// has the clause already).
fn resumes(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| ["-r", "--resume"].contains(&a.as_str()) || a.starts_with("--resume="))
}

/// Drops what would offer the shell and file writes under `-p`:
/// `--yolo`, `-y`, `--approval-mode MODE`.
fn drop_approvals(args: &mut Vec<String>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut words = std::mem::take(args).into_iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--yolo" | "-y" => {}
            "--approval-mode" => {
                words.next();
            }
            w if w.starts_with("--approval-mode=") || w.starts_with("--yolo=") => {}
            "--" => {
                kept.push(word);
                kept.extend(words.by_ref());
            }
            _ => kept.push(word),
        }
    }
    *args = kept;
}

/// Composes `gemini -p`'s command line: the user's (or [`base_command`]'s)
/// with, when an operator is attached, the run's home
/// ([`prepare_home`], named by `attached.mcp_config`) in `GEMINI_CLI_HOME`;
/// for a read-only run the approval flags dropped; and the clause before
/// the prompt, unless the session is resumed.
pub fn compose(
    user: UserCommand,
    verb: Verb,
    attached: Option<&Attached>,
    read_only: bool,
) -> Composed {
    let mut args = user.rest;
    let (mut clause, mut env) = match attached {
        Some(bridge) => (
            super::attached_clause(verb).replace(super::ASK_TOOL, ASK_TOOL),
            super::bridge_env(bridge),
        ),
        None => (super::headless_clause(verb), BTreeMap::new()),
    };
    if let Some(home) = attached.and_then(|b| b.mcp_config.parent()?.parent()) {
        env.insert(HOME.to_owned(), home.display().to_string());
    }
    if read_only {
        clause = format!("{clause} {READ_ONLY_CLAUSE}");
        drop_approvals(&mut args);
    }
    if !resumes(&args)
        && let Some((at, inline)) = prompt_at(&args)
    {
        let prompt = match inline {
            true => &args[at]["--prompt=".len()..],
            false => &args[at],
        };
        let prompt = format!("{clause}\n\n{prompt}");
        args[at] = match inline {
            true => format!("--prompt={prompt}"),
            false => prompt,
        };
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

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    fn bridge() -> Attached {
        Attached {
            hark: "/opt/hark/bin/hark".into(),
            socket: "/run/h/ask.sock".into(),
            mcp_config: "/run/h/gemini-home/.gemini/settings.json".into(),
            session_id: "s1".into(),
            ask_timeout: Some(std::time::Duration::from_secs(300)),
            longest_wait: std::time::Duration::from_secs(300),
            park_hook: None,
        }
    }

    #[test]
    fn the_clause_goes_before_the_prompt_and_not_into_a_resumed_session() {
        let user = UserCommand::verbatim(&words(&["gemini", "-m", "x", "-p", "go"])).unwrap();
        let c = compose(user, Verb::Task, None, false);
        assert_eq!(c.args[..4], ["-m", "x", "-p", c.args[3].as_str()]);
        assert!(c.args[3].starts_with("Carry out") && c.args[3].ends_with("\n\ngo"));
        assert!(c.env.is_empty());
        let base = base_command(Path::new("gemini"), Some("-go"), Some("u-1"));
        let c = compose(base, Verb::Task, None, false);
        assert_eq!(
            c.args,
            [
                "--prompt=-go",
                "--output-format",
                "stream-json",
                "--skip-trust",
                "--resume",
                "u-1"
            ]
        );
        let none = UserCommand::verbatim(&words(&["gemini", "--resume", "latest"])).unwrap();
        assert_eq!(check_wrapped(&none), Err(NoPrompt));
    }

    #[test]
    fn attached_it_gets_a_home_whose_settings_name_the_trusted_server() {
        let theirs = json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
            "mcpServers": {"mine": {"command": "x"}, "operator": {"command": "old"}}});
        let settings = settings(theirs, &bridge(), Path::new("/run/h/agent.toml"));
        assert_eq!(
            settings["security"]["auth"]["selectedType"],
            "gemini-api-key"
        );
        assert_eq!(settings["mcpServers"]["mine"]["command"], "x");
        let operator = &settings["mcpServers"]["operator"];
        assert_eq!(operator["command"], "/opt/hark/bin/hark");
        assert_eq!(operator["trust"], true);
        assert_eq!(operator["timeout"], 360_000);
        assert_eq!(operator["env"][crate::env::ASK_SOCK], "/run/h/ask.sock");
        assert_eq!(operator["env"][crate::env::CONFIG], "/run/h/agent.toml");

        let user = UserCommand::verbatim(&words(&["gemini", "--yolo", "--prompt=go", "-y"]));
        let c = compose(user.unwrap(), Verb::Task, Some(&bridge()), true);
        assert_eq!(c.env[HOME], "/run/h/gemini-home");
        assert_eq!(c.args.len(), 1, "{:?}", c.args);
        assert!(c.args[0].starts_with("--prompt=") && c.args[0].contains(ASK_TOOL));
        assert!(c.args[0].contains("read-only") && c.args[0].ends_with("\n\ngo"));
        assert!(!c.args[0].contains(super::super::ASK_TOOL));
    }

    #[test]
    fn the_home_links_the_users_entries_beside_harks_settings() {
        let root = std::env::temp_dir().join(format!("hark-gemini-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".gemini/tmp")).unwrap();
        std::fs::write(home.join(".gemini/settings.json"), r#"{"a":1}"#).unwrap();
        std::fs::write(home.join(".gemini/oauth_creds.json"), "{}").unwrap();
        assert_eq!(user_settings(Some(&home)).unwrap(), json!({"a": 1}));
        let path = prepare_home(&root.join("run"), Some(&home), &json!({"b": 2})).unwrap();
        assert_eq!(path, root.join("run/gemini-home/.gemini/settings.json"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"b":2}"#);
        assert!(path.with_file_name("tmp").is_dir());
        assert!(path.with_file_name("oauth_creds.json").is_file());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
