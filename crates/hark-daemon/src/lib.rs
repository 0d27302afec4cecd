//! The daemon, assembled in one place: the core's socket, store and
//! registry ([`hark_core::daemon::serve::prepare`]), the web surface and
//! the phone push when the config's `[web]` asks for them, and the team's
//! hub when `[hub]` (or the caller's URL) names one. `hark serve`, the
//! desktop app and the agent-only host of `mcp-operator-ask --hub` each
//! call [`assemble`]; what they add is their operator (the prompter) and
//! what they print. It prints nothing itself.

use std::net::SocketAddr;
use std::sync::Arc;

use hark_core::daemon::serve::{self, Prepared, ServeError, ServeOptions};
use hark_core::prompter::OperatorPrompter;
use hark_hub::{Hub, HubError, HubOptions, Role};
use hark_web::{WebError, WebOptions};

/// What serves besides the core's socket.
#[derive(Debug, Clone)]
pub struct Surfaces {
    pub web: Web,
    /// The team's hub; `None`: not joined, whatever the config says.
    pub hub: Option<HubJoin>,
}

/// The web surface (and the phone push, which needs it).
#[derive(Debug, Clone)]
pub enum Web {
    /// Not served (the agent-only host).
    Off,
    /// As the config's `[web]` says: served when it names an address or
    /// `listen` (`hark serve --web ADDR`) does.
    Configured {
        listen: Option<SocketAddr>,
        /// `--insecure-http`: plain HTTP on an address that is not loopback.
        insecure_http: bool,
    },
}

/// How the hub is joined.
#[derive(Debug, Clone)]
pub struct HubJoin {
    /// The server, over the config's `[hub] url` (`--hub URL`, `HARK_HUB`).
    pub url: Option<hark_core::config::HubUrls>,
    pub role: Role,
    /// Fail when neither names a server (`mcp-operator-ask --hub`, which
    /// has no other operator), rather than serve without the hub.
    pub required: bool,
}

/// The hub this daemon joined.
#[derive(Debug)]
pub struct Joined {
    pub options: HubOptions,
    /// The hub's tasks; they end when it is dropped.
    pub serving: hark_hub::Serving,
}

/// The daemon, ready to serve ([`hark_core::daemon::listener::run`]).
#[derive(Debug)]
pub struct Assembled {
    pub prepared: Prepared,
    /// The web surface, when it serves: where, and its end (it stops,
    /// gracefully, with the daemon's socket).
    pub web: Option<hark_web::Serving>,
    pub hub: Option<Joined>,
}

#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    Web(#[from] WebError),
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error("no hub to ask: give `--hub URL` or set `[hub] url` in the config")]
    NoHub,
}

/// Prepares the core with `prompter` as the operator, then the surfaces.
/// The hub is joined before the socket serves, so that every item from the
/// first is decided there. Must run inside a tokio runtime.
pub async fn assemble(
    prompter: Arc<dyn OperatorPrompter>,
    options: ServeOptions,
    surfaces: Surfaces,
) -> Result<Assembled, AssembleError> {
    let prepared = serve::prepare(prompter, options)?;
    let web = match surfaces.web {
        Web::Off => None,
        Web::Configured {
            listen,
            insecure_http,
        } => match WebOptions::from_whole_config(&prepared.config, listen)? {
            Some(mut web) => {
                web.insecure_http = insecure_http;
                let stop = prepared.daemon.hosts.stopped();
                let serving = hark_web::start(prepared.daemon.registry.clone(), web, stop).await?;
                let _ = prepared.daemon.web_url.set(serving.url.clone());
                Some(serving)
            }
            None => None,
        },
    };
    let hub = match surfaces.hub {
        None => None,
        Some(join) => {
            match HubOptions::from_config(prepared.config.hub.as_ref(), join.url, join.role) {
                Some(options) => {
                    let hub = Hub::connect(options.clone()).await?;
                    let serving = hub.serve(&prepared.daemon.registry);
                    Some(Joined { options, serving })
                }
                None if join.required => return Err(AssembleError::NoHub),
                None => None,
            }
        }
    };
    Ok(Assembled { prepared, web, hub })
}
