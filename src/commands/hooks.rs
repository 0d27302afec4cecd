//! `hark hooks install|uninstall [--project] [--agent claude|codex]`:
//! hark's hooks for the sessions someone starts in a terminal — Claude
//! Code's `PermissionRequest` and `PostToolUse` in its settings (see
//! `hark_mcp::permission`), Codex's `SessionStart` in its `hooks.json`
//! (it starts `hark codex-bridge`). The file is read, changed with
//! [`hark_core::agent::hooks`] (the user's own hooks kept) and written
//! whole in one rename; one that is not JSON is left alone.

use std::path::{Path, PathBuf};

use hark_core::agent::hooks::{
    CLAUDE_TERMINAL_HOOKS, CODEX_TERMINAL_HOOKS, TerminalHooks, has_terminal_hooks,
    with_terminal_hooks, without_terminal_hooks,
};
use serde_json::Value;

use crate::cli::{HooksAgent, HooksCommand, HooksWhere};
use crate::commands::this_hark;
use crate::exit::ExitStatus;

pub fn run(command: HooksCommand) -> ExitStatus {
    let (install, place) = match command {
        HooksCommand::Install(place) => (true, place),
        HooksCommand::Uninstall(place) => (false, place),
    };
    if place.project && place.agent == HooksAgent::Codex {
        eprintln!(
            "hark: Codex's hooks are its home's (`$CODEX_HOME/hooks.json`); --project is Claude Code's"
        );
        return ExitStatus::Refused;
    }
    let Some(file) = settings_file(&place) else {
        eprintln!("hark: cannot tell your home directory (HOME is not set)");
        return ExitStatus::Failure;
    };
    let set: TerminalHooks = match place.agent {
        HooksAgent::Claude => CLAUDE_TERMINAL_HOOKS,
        HooksAgent::Codex => CODEX_TERMINAL_HOOKS,
    };
    let settings = match read(&file) {
        Ok(settings) => settings,
        Err(unreadable) => {
            eprintln!("hark: {unreadable}; it was left as it is");
            return ExitStatus::Refused;
        }
    };
    let had = has_terminal_hooks(set, &settings);
    let changed = if install {
        let hark = match this_hark() {
            Ok(hark) => hark,
            Err(e) => {
                eprintln!("hark: {e}");
                return ExitStatus::Failure;
            }
        };
        with_terminal_hooks(set, settings.clone(), &hark)
    } else {
        without_terminal_hooks(set, settings.clone())
    };
    if changed != settings
        && let Err(e) = write(&file, &changed)
    {
        eprintln!("hark: cannot write {}: {e}", file.display());
        return ExitStatus::Failure;
    }
    match (install, had) {
        (true, _) if place.agent == HooksAgent::Codex => {
            println!(
                "hark: an interactive Codex's approval prompts now reach you (a SessionStart hook in {} starts `hark codex-bridge`)",
                file.display()
            );
            eprintln!(
                "note: Codex asks you to trust a new hook once (its \"Hooks need review\" screen); a prompt is still answered in its terminal too, whichever comes first; `codex --no-daemon` opens no app-server and is not bridged"
            );
        }
        (true, _) => {
            println!(
                "hark: Claude Code's permission dialogs now reach you (hooks in {}); a session started before this picks them up when it restarts",
                file.display()
            );
            eprintln!(
                "note: a dialog is still answered in its terminal too, whichever comes first; with no daemon running the hook changes nothing. Claude Code's own deny rules win over your allow"
            );
        }
        (false, true) => println!("hark: the hooks are out of {}", file.display()),
        (false, false) => println!("hark: {} had no hark hook", file.display()),
    }
    ExitStatus::Success
}

/// `~/.claude/settings.json`, or the project's `.claude/settings.json`;
/// Codex's `$CODEX_HOME/hooks.json`.
fn settings_file(place: &HooksWhere) -> Option<PathBuf> {
    if place.agent == HooksAgent::Codex {
        return hark_codex::codex_home().map(|home| home.join("hooks.json"));
    }
    let base = if place.project {
        PathBuf::from(".")
    } else {
        std::env::home_dir()?
    };
    Some(base.join(".claude").join("settings.json"))
}

/// Why the settings were left as they are.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("{} is not JSON ({source})", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is not a JSON object", .0.display())]
    NotAnObject(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The settings as they are: `{}` when there is no file.
fn read(file: &Path) -> Result<Value, Unreadable> {
    match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Default::default())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => Ok(value),
            Ok(_) => Err(Unreadable::NotAnObject(file.to_owned())),
            Err(source) => Err(Unreadable::NotJson {
                path: file.to_owned(),
                source,
            }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Default::default())),
        Err(source) => Err(Unreadable::Io {
            path: file.to_owned(),
            source,
        }),
    }
}

/// Writes the settings whole: a temporary file beside it, renamed over it.
fn write(file: &Path, settings: &Value) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut text = serde_json::to_string_pretty(settings).map_err(std::io::Error::other)?;
    text.push('\n');
    let temp = tempfile::NamedTempFile::new_in(dir)?;
    std::fs::write(temp.path(), text)?;
    if let Ok(meta) = std::fs::metadata(file) {
        std::fs::set_permissions(temp.path(), meta.permissions())?;
    }
    temp.persist(file).map(|_| ()).map_err(|e| e.error)
}
