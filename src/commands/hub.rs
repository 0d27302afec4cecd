//! `hark hub credential`, and the agent-only host: `hark mcp-operator-ask
//! --hub`, which asks the team's hub with no daemon on the host.

use std::sync::Arc;

use hark_core::config::Config;
use hark_core::daemon::{listener, serve};
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::prompter::{OperatorPrompter, PromptFuture};
use hark_hub::{Hub, HubOptions, Role};

use crate::cli::{HubCommand, HubRoleArg};
use crate::commands::Failed;
use crate::exit::ExitStatus;

/// Runs a `hark hub` command.
pub fn run(command: HubCommand) -> Result<ExitStatus, Failed> {
    match command {
        HubCommand::Credential { role, out } => {
            let out = match out {
                Some(out) => out,
                None => hark_core::config::Hub::default_nkey().map_err(Failed::NoHome)?,
            };
            credential(role, &out)
        }
    }
}

/// Makes a key pair: the seed into `out` (owner-only), the server's user
/// entry for it on stdout.
fn credential(role: HubRoleArg, out: &std::path::Path) -> Result<ExitStatus, Failed> {
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
    let user = hark_hub::credential::server_user(&made.public, role);
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

/// Serves the agent's MCP through a daemon of its own, on a private socket,
/// whose registry has every item decided on the hub with the host's agent
/// credential: the same tool results as with a daemon, answered by the
/// team's operators, and unanswered when the bounded wait ends.
pub async fn serve_agent(
    config: &Config,
    url: String,
    mut settings: hark_mcp::McpSettings,
) -> Result<(), Failed> {
    let url = Some(url).filter(|u| !u.is_empty());
    let Some(options) = HubOptions::from_config(config.hub.as_ref(), url, Role::Agent) else {
        return Err(Failed::NoHub);
    };
    let hub = Hub::connect(options).await?;
    let dir = tempfile::Builder::new()
        .prefix("hark-hub-")
        .tempdir()
        .map_err(Failed::Runtime)?;
    let prepared = serve::prepare(
        Arc::new(NobodyHere),
        serve::ServeOptions {
            socket: Some(dir.path().join("hark.sock")),
            store: Some(dir.path().join("hark.db")),
            ..Default::default()
        },
    )?;
    let _serving = hub.serve(&prepared.daemon.registry);
    settings.socket = prepared.socket_file.path().to_owned();
    if settings.timeout.is_none() {
        settings.timeout = Some(prepared.daemon.default_timeout);
    }
    let daemon = tokio::spawn(listener::run(
        prepared.listener,
        prepared.daemon,
        std::future::pending(),
    ));
    let served = hark_mcp::OperatorServer::new(settings).serve_stdio().await;
    daemon.abort();
    drop(prepared.socket_file);
    served.map_err(Failed::Mcp)
}
