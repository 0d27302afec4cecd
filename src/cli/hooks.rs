//! The command line of the hooks hark puts in agents' settings and of the
//! bridge to an interactive Codex (`hark hooks`, `hark hook`, `hark
//! codex-bridge`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add the hook (again, replacing an earlier hark's).
    Install(HooksWhere),
    /// Take the hook out.
    Uninstall(HooksWhere),
}

#[derive(Debug, Args)]
pub struct HooksWhere {
    /// This project's `.claude/settings.json` (in the current directory)
    /// rather than your own `~/.claude/settings.json` (Claude Code only).
    #[arg(long)]
    pub project: bool,
    /// Whose sessions: Claude Code's (`~/.claude/settings.json`) or
    /// Codex's (`$CODEX_HOME/hooks.json`, `~/.codex` by default).
    #[arg(long, value_enum, default_value = "claude")]
    pub agent: HooksAgent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HooksAgent {
    Claude,
    Codex,
}

#[derive(Debug, Args)]
pub struct CodexBridgeArgs {
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// Start it in the background and return (what the hook does).
    #[arg(long)]
    pub detach: bool,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event: `pre-tool-use` (the runs hark dispatches), or
    /// `permission-request` and `post-tool-use` (a Claude Code session
    /// started in a terminal: its permission dialogs reach the operator;
    /// `hark hooks install`), or `session-start` (a Codex session: starts
    /// `hark codex-bridge`; `hark hooks install --agent codex`).
    pub event: HookEvent,
    /// A read-only run's hook, which sees every tool call: calls other than
    /// an ask go to the write-mode gate, and its approvals park too.
    #[arg(long)]
    pub approvals: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum HookEvent {
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    SessionStart,
}
