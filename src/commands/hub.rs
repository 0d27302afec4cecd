//! `hark hub credential`, and the agent-only host: `hark mcp-operator-ask
//! --hub`, which asks the team's hub with no daemon on the host.

use std::sync::Arc;

use hark_core::daemon::{listener, serve};
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::prompter::{OperatorPrompter, PromptFuture};
use hark_hub::Role;

use crate::cli::{HubCommand, HubRoleArg};
use crate::commands::Failed;
use crate::exit::ExitStatus;

/// Runs a `hark hub` command.
pub fn run(command: HubCommand) -> Result<ExitStatus, Failed> {
    match command {
        HubCommand::Credential { role, out, host } => {
            let out = match out {
                Some(out) => out,
                None => hark_core::config::Hub::default_nkey().map_err(Failed::NoHome)?,
            };
            let host = host.unwrap_or_else(hark_hub::this_host);
            credential(role, &out, &host)
        }
    }
}

/// Makes a key pair: the seed into `out` (owner-only), the server's user
/// entry for it on stdout.
fn credential(role: HubRoleArg, out: &std::path::Path, host: &str) -> Result<ExitStatus, Failed> {
    let role = match role {
        HubRoleArg::Operator => Role::Operator,
        HubRoleArg::Agent => Role::Agent,
    };
    let made = hark_hub::credential::make();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        hark_core::files::ensure_private_dir(dir).map_err(|e| Failed::Write {
            path: out.to_owned(),
            source: std::io::Error::other(e.to_string()),
        })?;
    }
    write_secret(out, &made.seed).map_err(|source| Failed::Write {
        path: out.to_owned(),
        source,
    })?;
    let user = hark_hub::credential::server_user(&made.public, role, host);
    println!(
        "{}",
        serde_json::to_string_pretty(&user).unwrap_or_default()
    );
    eprintln!(
        "hark: the seed is in {} (keep it on this host only); add the entry above to the server's `authorization {{ users = [ … ] }}`",
        out.display()
    );
    Ok(ExitStatus::Success)
}

/// Writes a new file only its owner can read (never over an existing one).
fn write_secret(path: &std::path::Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    open.open(path)?.write_all(format!("{secret}\n").as_bytes())
}

/// The prompter of a host with no operator: it never answers. Its items
/// wait for the hub (an operator elsewhere) or their bounded wait.
struct NobodyHere;

impl OperatorPrompter for NobodyHere {
    fn ask(&self, _: &SessionId, _: Arc<Item>) -> PromptFuture {
        Box::pin(std::future::pending())
    }

    fn surface(&self) -> Surface {
        Surface::Cli
    }
}

/// A daemon of this host's own for agents that ask the hub directly: on a
/// private socket (in a temp directory, which a confined run's private
/// `/tmp` does not show), its registry deciding every item on the hub with
/// the host's agent credential, its prompter nobody. Ends when dropped.
pub struct AgentDaemon {
    /// Where the agent's side connects.
    pub socket: std::path::PathBuf,
    /// The wait an ask gets when it names none.
    pub default_timeout: std::time::Duration,
    task: tokio::task::JoinHandle<()>,
    _serving: hark_hub::Serving,
    _socket_file: hark_core::bridge::socket::SocketFile,
    _dir: tempfile::TempDir,
}

/// Why the agents' daemon did not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentDaemonError {
    #[error("--hub: {0}")]
    Url(#[from] hark_core::config::UrlError),
    #[error(transparent)]
    Assemble(#[from] hark_daemon::AssembleError),
    #[error("cannot make the agents' daemon a directory: {0}")]
    Dir(std::io::Error),
}

impl AgentDaemon {
    /// Joins the hub at `url` (the config's when empty: `--hub` given no
    /// URL) as an agent host, and serves its daemon: a socket and store of
    /// its own, in a private directory, and nobody here to answer.
    pub async fn start(url: &str) -> Result<AgentDaemon, AgentDaemonError> {
        let url = match url {
            "" => None,
            url => Some(url.parse()?),
        };
        let dir = tempfile::Builder::new()
            .prefix("hark-hub-")
            .tempdir()
            .map_err(AgentDaemonError::Dir)?;
        let assembled = hark_daemon::assemble(
            Arc::new(NobodyHere),
            serve::ServeOptions {
                socket: Some(dir.path().join("hark.sock")),
                store: Some(dir.path().join("hark.db")),
                ..Default::default()
            },
            hark_daemon::Surfaces {
                web: hark_daemon::Web::Off,
                hub: Some(hark_daemon::HubJoin {
                    url,
                    role: Role::Agent,
                    required: true,
                }),
            },
        )
        .await?;
        let prepared = assembled.prepared;
        let serving = assembled.hub.expect("a required hub is joined").serving;
        let socket = prepared.socket_file.path().to_owned();
        let default_timeout = prepared.daemon.default_timeout;
        let task = tokio::spawn(listener::run(
            prepared.listener,
            prepared.daemon,
            std::future::pending(),
        ));
        Ok(AgentDaemon {
            socket,
            default_timeout,
            task,
            _serving: serving,
            _socket_file: prepared.socket_file,
            _dir: dir,
        })
    }
}

impl Drop for AgentDaemon {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the agent's MCP through a daemon of its own ([`AgentDaemon`]):
/// the same tool results as with a daemon, answered by the team's
/// operators, and unanswered when the bounded wait ends.
pub async fn serve_agent(url: String, mut settings: hark_mcp::McpSettings) -> Result<(), Failed> {
    let daemon = AgentDaemon::start(&url).await?;
    settings.socket = daemon.socket.clone();
    if settings.timeout.is_none() {
        settings.timeout = Some(daemon.default_timeout);
    }
    let served = hark_mcp::OperatorServer::new(settings).serve_stdio().await;
    drop(daemon);
    served.map_err(Failed::Mcp)
}
