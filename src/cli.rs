//! The command line, as clap parses it. Each command's arguments are one
//! `#[derive(Args)]` struct that its module in [`crate::commands`] takes as
//! it is.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hark_core::bridge::options::RunOptions;
use hark_core::model::approval::Scope;

mod hooks;
pub use hooks::{CodexBridgeArgs, HookArgs, HookEvent, HooksAgent, HooksCommand, HooksWhere};

#[derive(Debug, Parser)]
#[command(
    name = "hark",
    version,
    about = "An operator console for headless AI agents: their questions reach you, your answers reach them."
)]
pub struct Cli {
    /// What to do; with none, start the desktop app.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the desktop app: notifications, the question modal, the tray
    /// inbox (`--autostart on|off`: start it at login, or stop doing so).
    App(AppArgs),
    /// Say what this machine has for hark, and what is missing: the daemon
    /// and its socket, notifications, the tray, the agents, the store.
    Doctor,
    /// Run the headless daemon: agents' questions are asked on this terminal
    /// or answered by a script.
    Serve(ServeArgs),
    /// The MCP stdio server for your own agent (Claude Code in a terminal,
    /// an editor): server `hark`, tools `run` (dispatch an agent; its
    /// questions come to you as elicitations or `awaiting_operator`),
    /// `answer` and `runs`. Needs the app or `hark serve` running.
    McpStudio,
    /// The MCP stdio server an agent spawns (server `operator`, tool `ask`).
    McpOperatorAsk(McpArgs),
    /// Claude Code's hook for the runs hark dispatches (`pre-tool-use`: lets
    /// a question nobody answers in time park the agent). Reads the hook's
    /// input on stdin, prints its decision.
    #[command(hide = true)]
    Hook(HookArgs),
    /// Ask the operator from a script; prints `{"outcome":…}` as JSON.
    /// Exit 0 answered, 2 invalid input, 3 not answered.
    Ask(AskArgs),
    /// Run an agent (`claude -p` by default, or `codex exec` with `--agent
    /// codex`) with the bridge attached when an operator is: `hark run
    /// [--verb task|ask|decide|converse] -- PROMPT…`, or `hark run --wrap --
    /// claude -p "…" [their flags]` (or `codex exec …`). Exits with the agent's status.
    Run(RunArgs),
    /// Take over a parked run whose `hark run` is gone (a reboot, a closed
    /// terminal): wait here for its question to be settled and resume the
    /// agent. The daemon does the same by itself when the question is
    /// answered and nobody has taken the run over.
    Resume(ResumeArgs),
    /// List the items waiting for you (and, with --all, the history); long
    /// texts are clipped, each cut marked.
    Inbox(InboxArgs),
    /// Show one item whole, nothing clipped (`--json` for its every byte).
    Show(ItemArgs),
    /// The runs `hark run` dispatched: running, waiting on you, finished or
    /// failed, with the items each asked.
    Runs(ListArgs),
    /// The agent sessions that asked: waiting on you, active or ended (their
    /// agent's process), with how many items each asked and how the last ended.
    Sessions(ListArgs),
    /// Answer a pending item. Questions you leave out take their defaults.
    Answer(AnswerArgs),
    /// Skip a pending item: the agent proceeds without confirmed answers
    /// (a parked run is resumed with the skip: "let it proceed without me").
    Skip(ItemArgs),
    /// Cancel a pending item and the run waiting on it: a parked run is not
    /// resumed and ends; a waiting agent is told its call was cancelled.
    Cancel(ItemArgs),
    /// Allow a pending write-mode approval: for the rest of the run (`turn`),
    /// this action only, or the rest of the session. Without --scope: turn,
    /// or the action alone for an external effect (a push, a PR).
    Approve(ApproveArgs),
    /// Deny a pending write-mode approval: the agent stays read-only.
    Deny(ItemArgs),
    /// The web surface's paired devices: `pair` prints a one-time code (and
    /// the address to open it at) for a phone or browser, `devices` lists
    /// them, `revoke ID` ends a device's sessions.
    #[command(subcommand)]
    Web(WebCommand),
    /// The phone push's secrets: `setup` keeps the ntfy topic (a new,
    /// unguessable one unless given) and access token in the data
    /// directory, out of the config and of a confined agent's reach.
    #[command(subcommand)]
    Push(PushCommand),
    /// Claude Code or Codex sessions you start in a terminal: `install` adds
    /// hark's hooks to the agent's settings, so each permission dialog also
    /// reaches you here (desk, phone, web) and your verdict answers it,
    /// while the terminal's dialog stays live; `uninstall` takes them out.
    /// Your own hooks are kept either way.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Carry an interactive Codex's approval prompts to you: a client of
    /// the app-server its terminal UI runs, until that stops. Codex's
    /// `SessionStart` hook starts it (`hark hooks install --agent codex`);
    /// one per Codex home.
    CodexBridge(CodexBridgeArgs),
    /// Print the MCP config that points an agent at this hark:
    /// `claude -p … --mcp-config "$(hark mcp-config)" --allowedTools mcp__operator__ask`.
    McpConfig(McpConfigArgs),
    /// Log in to another host with this operator reachable from it: `ssh -R`
    /// forwards a socket there to this daemon's socket for that host, so
    /// agents there ask you here, and their items say which host asked.
    /// That socket takes questions only: nothing there can answer or list.
    Ssh(SshArgs),
    /// The team's hub (NATS JetStream).
    #[command(subcommand)]
    Hub(HubCommand),
    /// Print the completion script for SHELL (`bash`, `zsh`, `fish`,
    /// `powershell`): `hark completions bash > ~/.local/share/bash-completion/completions/hark`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print hark's man page (roff), as the `.deb` installs it.
    #[command(hide = true)]
    Man,
}

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Make a credential for one host: an nkey seed written to OUT (only
    /// you can read it; keep it on that host), and the entry for the NATS
    /// server's config printed, with what the role may do.
    Credential {
        /// `agent`: may ask and read answers, never answer (a CI runner);
        /// `operator`: may answer.
        #[arg(long, value_enum)]
        role: HubRoleArg,
        /// Where the seed goes (default: hub.nk in hark's data directory,
        /// where `[hub]` finds it, out of what `hark run` confines can read).
        #[arg(long, value_name = "OUT")]
        out: Option<PathBuf>,
        /// The host the credential is for, as its `[hub] host` names it
        /// (default: this host's name). An agent's credential posts and
        /// withdraws only that host's items.
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HubRoleArg {
    Operator,
    Agent,
}

#[derive(Debug, Args)]
pub struct SshArgs {
    /// What items from there are named (default: DESTINATION's host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the socket appears on the remote host, an absolute path
    /// (default: `$XDG_RUNTIME_DIR/hark/hark.sock` there, where hark looks
    /// by itself, else `$HOME/.hark/hark.sock`, asked of the remote first).
    #[arg(long, value_name = "PATH")]
    pub remote_socket: Option<String>,
    /// One argument for ssh, before the destination; repeat it for more
    /// (`--ssh-arg=-p --ssh-arg=2222`, `--ssh-arg=-F --ssh-arg=FILE`).
    #[arg(long = "ssh-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub ssh_args: Vec<String>,
    /// The host to reach, as ssh takes it (`devbox`, `me@devbox`).
    pub destination: String,
    /// A command to run there instead of a login shell.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Default, Args)]
pub struct AppArgs {
    /// Start the app at login (`on`: write the desktop session's autostart
    /// entry, `$XDG_CONFIG_HOME/autostart/dev.hark.app.desktop`) or stop
    /// doing so (`off`), instead of starting it now.
    #[arg(long, value_name = "on|off", conflicts_with = "desktop_entry")]
    pub autostart: Option<Switch>,
    /// Print the desktop entry (for an applications menu, as packages
    /// install it) that starts the app with the `hark` at PATH.
    #[arg(long, value_name = "PATH")]
    pub desktop_entry: Option<PathBuf>,
    /// Join the team's hub at URL, over the config's `[hub] url` (see
    /// `hark serve --hub`).
    #[arg(long, value_name = "URL", conflicts_with_all = ["autostart", "desktop_entry"])]
    pub hub: Option<hark_core::config::HubUrls>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct McpConfigArgs {
    /// Print instead the `--settings` JSON with the park hook: a question
    /// nobody answers within the bounded wait then ends the agent saved
    /// (`stop_reason: tool_deferred`) rather than lets it guess, and
    /// `claude -p --resume SESSION` after you answer carries on with the
    /// answer.
    #[arg(long)]
    pub park_hook: bool,
    /// The agent to print it for: `claude` (its `--mcp-config` JSON),
    /// `codex` (`codex exec`'s `-c` overrides, one word a line: `mapfile -t
    /// c < <(hark mcp-config --for codex); codex exec "${c[@]}" "…"`), or
    /// `cursor`, `gemini`, `goose`, `opencode`, `vscode` (what goes in its
    /// config file; where, and its caveats, on stderr).
    #[arg(long = "for", value_enum, default_value = "claude")]
    pub agent: AgentKindArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentKindArg {
    Claude,
    Codex,
    Cursor,
    Gemini,
    Goose,
    Opencode,
    Vscode,
}

/// Who answers: `terminal` or `script:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrompterChoice {
    Terminal,
    Script(PathBuf),
}

/// A `--prompter` that is neither.
#[derive(Debug, thiserror::Error)]
#[error("unknown prompter {0:?}: use `terminal` or `script:PATH`")]
pub struct UnknownPrompter(String);

impl FromStr for PrompterChoice {
    type Err = UnknownPrompter;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            None if s == "terminal" => Ok(PrompterChoice::Terminal),
            Some(("script", path)) if !path.is_empty() => Ok(PrompterChoice::Script(path.into())),
            _ => Err(UnknownPrompter(s.to_owned())),
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Who answers: `terminal`, or `script:PATH` (a JSON map of question → answer).
    #[arg(long, default_value = "terminal")]
    pub prompter: PrompterChoice,
    /// Seconds the operator has to answer (default: the config's, else 300).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub ask_timeout: Option<Duration>,
    /// The socket to serve (default: $HARK_SOCKET, else $XDG_RUNTIME_DIR/hark/hark.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Require a pre-picked default on every question.
    #[arg(long)]
    pub strict_defaults: bool,
    /// How logs (and trace events) are written to stderr.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormatArg,
    /// Serve the web surface (the inbox and modal in a browser) on ADDR
    /// (`127.0.0.1:8787`; port 0 picks one), over the config's `[web]`
    /// listen address. Loopback unless `[web]` has a TLS certificate.
    #[arg(long, value_name = "ADDR")]
    pub web: Option<std::net::SocketAddr>,
    /// Serve the web surface over plain HTTP on an address that is not
    /// loopback: its traffic, session cookies included, can then be read
    /// on the network.
    #[arg(long)]
    pub insecure_http: bool,
    /// Join the team's hub at URL (`nats://host:4222`), over the config's
    /// `[hub] url`, with the config's credential: the team's items show
    /// here, and every reply is decided there.
    #[arg(long, value_name = "URL")]
    pub hub: Option<hark_core::config::HubUrls>,
}

#[derive(Debug, Subcommand)]
pub enum PushCommand {
    /// Keep the ntfy topic and token in the data directory (`push.toml`,
    /// owner-only), and print the topic to subscribe the phone to.
    Setup {
        /// The topic (default: the one kept, else a new random one).
        #[arg(long)]
        topic: Option<String>,
        /// Read an ntfy access token from stdin (one line).
        #[arg(long)]
        token_stdin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WebCommand {
    /// Print a one-time pairing code (16 characters, good for 5 minutes,
    /// one use) on the first line, and the page to enter it at on the
    /// second when the daemon serves the web surface.
    Pair {
        #[arg(long)]
        json: bool,
    },
    /// List the paired devices.
    Devices {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a paired device: its sessions end at once.
    Revoke {
        /// The device's id (from `hark web devices`).
        id: hark_core::model::ids::DeviceId,
    },
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also serve `approve`, the write-mode gate of a read-only agent
    /// (`--permission-prompt-tool mcp__operator__approve`).
    #[arg(long)]
    pub approvals: bool,
    /// Ask the team's hub directly, on a host with no daemon (a CI
    /// runner): at URL, or the config's `[hub] url` when none is given,
    /// with the config's credential (an agent's). The bounded wait ends
    /// unanswered; nothing parks.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub hub: Option<String>,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The questions, `{"questions":[…]}` as AskUserQuestion takes them (`-` for stdin).
    #[arg(long, value_name = "Q.json")]
    pub file: PathBuf,
    /// Seconds the operator has to answer; without it, the daemon's own
    /// wait (`hark serve --ask-timeout`, else its config) applies.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub timeout: Option<Duration>,
    /// Return `not_answered` at once when no operator is attached.
    #[arg(long)]
    pub no_wait: bool,
    /// The session to file the question under.
    #[arg(long)]
    pub session: Option<String>,
}

/// `hark run`'s arguments: its options, one struct with the daemon's
/// dispatch and the studio's `run` tool ([`RunOptions`]).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub options: RunOptions,
    /// The options as one JSON object, in place of the flags: how the
    /// daemon and the studio start the runs they dispatch.
    #[arg(long, value_name = "JSON", hide = true, exclusive = true, value_parser = options_json)]
    pub options_json: Option<Box<RunOptions>>,
}

impl RunArgs {
    /// The run's options, as flags or as JSON.
    pub fn options(self) -> RunOptions {
        self.options_json.map_or(self.options, |json| *json)
    }
}

/// `--options-json`'s value.
fn options_json(text: &str) -> Result<Box<RunOptions>, serde_json::Error> {
    serde_json::from_str(text)
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The parked run's id (see `hark runs`).
    pub run_id: String,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Settled items too: answered, skipped, timed out, cancelled.
    #[arg(long)]
    pub all: bool,
    /// Keep following: print each item as it arrives or settles.
    #[arg(long)]
    pub watch: bool,
    /// One JSON value per line, for scripts.
    #[arg(long)]
    pub json: bool,
    /// At most this many items.
    #[arg(long)]
    pub limit: Option<u32>,
    /// Delete the settled history.
    #[arg(long, conflicts_with_all = ["watch", "all"])]
    pub clear_settled: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// At most this many (the newest, waiting ones first; default 100).
    #[arg(long)]
    pub limit: Option<u32>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The item's id, or a unique prefix of it (see `hark inbox`).
    pub id: String,
    /// Pick an option by label (repeat for multi-select); `QUESTION=LABEL`
    /// when several questions share the label.
    #[arg(long = "pick", value_name = "LABEL", num_args = 1..)]
    pub picks: Vec<String>,
    /// Free text instead of an option (`QUESTION=TEXT` when there are several questions).
    #[arg(long)]
    pub text: Option<String>,
    /// Confirm the pre-picked defaults.
    #[arg(long, conflicts_with_all = ["picks", "text"])]
    pub defaults: bool,
    /// A note to the agent beside your answer (`QUESTION=TEXT` when there
    /// are several questions; repeat for several); it reaches the agent as
    /// AskUserQuestion's `annotations`.
    #[arg(long = "note", value_name = "TEXT")]
    pub notes: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ItemArgs {
    /// The item's id, or a unique prefix of it.
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub item: ItemArgs,
    #[arg(long, value_enum)]
    pub scope: Option<ScopeArg>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    Turn,
    Action,
    Session,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::Turn => Scope::Turn,
            ScopeArg::Action => Scope::Action,
            ScopeArg::Session => Scope::Session,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormatArg {
    Text,
    Json,
}

/// A timeout that is not a positive number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("a timeout must be a positive number of seconds, got {0}")]
pub struct NotSeconds(String);

/// A positive number of seconds.
fn seconds(text: &str) -> Result<Duration, NotSeconds> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(NotSeconds(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_options(words: &[&str]) -> RunOptions {
        let words = ["hark", "run"].iter().chain(words);
        match Cli::try_parse_from(words).unwrap().command {
            Some(Command::Run(args)) => args.options(),
            other => panic!("{other:?}"),
        }
    }

    /// Each flag of `hark run` lands in its field of `RunOptions`, and the
    /// options as JSON (how the daemon and the studio start a run) are the
    /// same options.
    #[test]
    fn every_run_flag_is_a_run_option_and_json_carries_them_all() {
        let flags = run_options(&[
            "--verb",
            "converse",
            "--cwd",
            "/w",
            "--session",
            "s",
            "--timeout",
            "2.5",
            "--on-timeout",
            "proceed",
            "--agent",
            "/bin/codex",
            "--agent-kind",
            "codex",
            "--wrap",
            "--read-only",
            "--no-confine",
            "--intake",
            "in.json",
            "--answer",
            "a=b",
            "--hub",
            "nats://h:4222",
            "--",
            "codex",
            "exec",
            "go",
        ]);
        assert_eq!(
            flags.on_timeout,
            Some(hark_core::config::OnTimeout::Proceed)
        );
        assert_eq!(flags.timeout_secs, Some(2.5));
        assert_eq!(flags.words, ["codex", "exec", "go"]);
        assert!(flags.wrap && flags.read_only && flags.no_confine);
        let json = serde_json::to_string(&flags).unwrap();
        assert_eq!(run_options(&["--options-json", &json]), flags);
        // Nothing else goes beside it.
        let words = ["hark", "run", "--options-json", &json, "--wrap"];
        assert!(Cli::try_parse_from(words).is_err());
        // The defaults.
        let bare = run_options(&["--", "hello"]);
        assert_eq!(bare.verb, hark_core::agent::Verb::Task);
        assert_eq!(bare.on_timeout, None);
        assert_eq!(run_options(&["--hub", "--", "x"]).hub.as_deref(), Some(""));
        assert!(Cli::try_parse_from(["hark", "run", "--timeout", "0", "--", "x"]).is_err());
    }
}
