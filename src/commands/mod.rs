//! One module per command. Each takes its [`crate::cli`] arguments as they
//! are, prints what the user sees (results on stdout, messages and `hint:`
//! lines on stderr), and returns how it ended as an [`ExitStatus`].

pub mod answer;
pub mod app;
pub mod ask;
pub mod codex;
pub mod doctor;
pub mod hooks;
pub mod hub;
pub mod inbox;
pub mod listings;
pub mod mcp;
pub mod push;
pub mod query;
pub mod run;
pub mod serve;
pub mod ssh;
pub mod store_health;
pub mod web;

use std::path::PathBuf;

use hark_core::bridge::socket::SocketError;
use hark_core::config::ConfigError;
use hark_core::daemon::serve::ServeError;
use hark_core::prompter::script::ScriptError;
use hark_core::store::StoreError;

use crate::cli::Command;
use crate::exit::ExitStatus;

/// Why a command could not start or finish, beyond what it reports itself.
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the MCP server stopped: {0}")]
    Mcp(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot find this hark's path: {0}")]
    ThisHark(std::io::Error),
    #[error("the desktop app is not installed next to hark ({} is missing)", .0.display())]
    AppMissing(PathBuf),
    #[error("cannot start {}: {source}", path.display())]
    AppExec {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the autostart entry: {0}")]
    Autostart(#[from] hark_core::autostart::AutostartError),
    #[error(transparent)]
    Web(#[from] hark_web::WebError),
    #[error(transparent)]
    Hub(#[from] hark_hub::HubError),
    #[error(transparent)]
    Daemon(hark_daemon::AssembleError),
    #[error(transparent)]
    AgentDaemon(#[from] hub::AgentDaemonError),
    #[error(transparent)]
    NoHome(#[from] hark_core::files::NoHomeError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The core's refusals as the core's, with their hints (a full disk, a
/// daemon already serving); the surfaces' as they are.
impl From<hark_daemon::AssembleError> for Failed {
    fn from(e: hark_daemon::AssembleError) -> Failed {
        match e {
            hark_daemon::AssembleError::Serve(e) => Failed::Serve(e),
            other => Failed::Daemon(other),
        }
    }
}

impl Failed {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Failed::AppMissing(_) => Some(
                "build it with `cargo build --release -p hark-app -p hark-window`, or run `hark serve --prompter terminal`",
            ),
            Failed::Serve(ServeError::Socket(SocketError::AlreadyRunning(_))) => {
                Some("stop the other `hark serve` or `hark app` first")
            }
            Failed::Serve(ServeError::Store(
                StoreError::Unwritable { .. } | StoreError::Sqlite { .. },
            )) => Some(
                "free space on the disk that holds the store and make sure its file can be written, or set HARK_DATA_DIR to another directory",
            ),
            _ => None,
        }
    }
}

/// Runs one command.
pub fn run(command: Command) -> Result<ExitStatus, Failed> {
    match command {
        Command::App(args) => app::run(args),
        Command::Doctor => doctor::run(),
        Command::Serve(args) => serve::run(args),
        Command::McpOperatorAsk(args) => mcp::operator_ask(args),
        Command::Hook(args) => mcp::hook(args),
        Command::Hooks(command) => Ok(hooks::run(command)),
        Command::CodexBridge(args) => codex::bridge(args),
        Command::McpStudio => mcp::studio(),
        Command::McpConfig(args) => mcp::config(args),
        Command::Ssh(args) => Ok(runtime()?.block_on(ssh::run(args))),
        Command::Web(command) => Ok(runtime()?.block_on(web::run(command))),
        Command::Push(command) => Ok(push::run(command)),
        Command::Completions { shell } => completions(shell),
        Command::Man => man(),
        Command::Hub(command) => hub::run(command),
        Command::Ask(args) => Ok(runtime()?.block_on(ask::run(args))),
        Command::Run(args) => Ok(runtime()?.block_on(run::run(args))),
        Command::Resume(args) => Ok(runtime()?.block_on(run::resume(args))),
        Command::Inbox(args) => Ok(runtime()?.block_on(inbox::run(args))),
        Command::Show(args) => Ok(runtime()?.block_on(inbox::show(args))),
        Command::Runs(args) => Ok(runtime()?.block_on(listings::runs(args))),
        Command::Sessions(args) => Ok(runtime()?.block_on(listings::sessions(args))),
        Command::Answer(args) => Ok(runtime()?.block_on(answer::answer(args))),
        Command::Skip(args) => Ok(runtime()?.block_on(answer::skip(args))),
        Command::Cancel(args) => Ok(runtime()?.block_on(answer::cancel(args))),
        Command::Approve(args) => Ok(runtime()?.block_on(answer::approve(args))),
        Command::Deny(args) => Ok(runtime()?.block_on(answer::deny(args))),
    }
}

/// The multi-threaded runtime the socket commands run on.
pub fn runtime() -> Result<CommandRuntime, Failed> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map(|runtime| CommandRuntime(Some(runtime)))
        .map_err(Failed::Runtime)
}

/// A command's runtime, which lets go of what is still blocked in its
/// threads [`LET_GO`] after the command is done. A tokio runtime dropped
/// waits for those without end, and some never end by themselves: on
/// Windows a child's output is read on one, and a read of a pipe that a
/// process outside the agent's job still holds open (a console host Wine
/// started, a process the job's end missed as it was being created) kept
/// `hark run` from ever exiting once its agent was stopped; the terminal
/// prompter's read of stdin is another.
#[derive(Debug)]
pub struct CommandRuntime(Option<tokio::runtime::Runtime>);

/// How long a finished command waits for its runtime's blocked threads.
const LET_GO: std::time::Duration = std::time::Duration::from_secs(1);

impl std::ops::Deref for CommandRuntime {
    type Target = tokio::runtime::Runtime;

    fn deref(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("the runtime is there until dropped")
    }
}

impl CommandRuntime {
    /// Lets go of the blocked threads at once (`hark serve`: everything
    /// that matters has ended when it stops).
    pub fn shutdown_background(mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for CommandRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_timeout(LET_GO);
        }
    }
}

/// This `hark`'s own path, resolved: what an MCP config or the autostart
/// entry names (the AppImage, run from one: `platform::lasting_hark`).
pub fn this_hark() -> Result<PathBuf, Failed> {
    let hark = std::env::current_exe().map_err(Failed::ThisHark)?;
    let hark = dunce::canonicalize(&hark).unwrap_or(hark);
    Ok(hark_core::platform::lasting_hark(hark))
}

/// `hark completions SHELL`: the script clap_complete makes from the
/// command line's own definition, so it never drifts from it.
fn completions(shell: clap_complete::Shell) -> Result<ExitStatus, Failed> {
    let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "hark", &mut script);
    print_whole(&script)
}

/// `hark man`: the man page clap_mangen renders from the same definition.
fn man() -> Result<ExitStatus, Failed> {
    let command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .map_err(|source| Failed::Write {
            path: "the man page".into(),
            source,
        })?;
    print_whole(&page)
}

/// Writes `bytes` to stdout; a reader gone early (`| head`) is no failure.
fn print_whole(bytes: &[u8]) -> Result<ExitStatus, Failed> {
    match std::io::Write::write_all(&mut std::io::stdout().lock(), bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failed::Write {
            path: "stdout".into(),
            source: e,
        }),
        _ => Ok(ExitStatus::Success),
    }
}
