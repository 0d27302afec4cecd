//! hark's web surface: the same inbox and modal as the desktop app, served
//! to a browser (a phone's, a laptop's) by the daemon, with its HTTP API
//! and an SSE feed of changes. The core does not know it: the daemon
//! (`hark serve --web`, the app with `[web]`) calls [`start`] with its
//! registry, and every reply goes through the registry's one set of rules
//! as [`Surface::Web`], so one reply wins whichever surface sends it.
//!
//! # Layout
//! - [`assets`]: `ui/src`, embedded, and the headers every response carries.
//! - [`auth`]: sessions (the `hark_session` cookie and the token every
//!   request carries besides) and the limit on failed pairings.
//! - [`origin`]: the surface's own host and origin, which every request
//!   must name.
//! - [`api`]: the JSON endpoints.
//! - [`feed`]: the registry's events, numbered and kept for a reconnecting
//!   client (`Last-Event-ID`).
//! - [`markdown`]: agents' Markdown as sanitized HTML (the app's renderer too).
//! - [`push`]: the phone push through ntfy, its buttons' one-time tokens
//!   answered at `POST /api/push/{token}` as [`Surface::Push`].
//!
//! Pairing, sessions and their storage are the core's ([`hark_core::pairing`]);
//! this crate carries them over HTTP.
//!
//! [`Surface::Web`]: hark_core::model::item::Surface::Web
//! [`Surface::Push`]: hark_core::model::item::Surface::Push

pub mod api;
pub mod assets;
pub mod auth;
pub mod error;
pub mod feed;
pub mod markdown;
pub mod origin;
pub mod push;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hark_core::config::Origin;
use hark_core::registry::Registry;
use hark_core::store::Store;
use tokio::sync::watch;

/// How the web surface serves.
#[derive(Debug, Clone)]
pub struct WebOptions {
    pub listen: SocketAddr,
    /// A PEM certificate chain and key: HTTPS (rustls) when set.
    pub tls: Option<TlsFiles>,
    /// Serve plain HTTP on an address that is not loopback (the operator
    /// said `--insecure-http`).
    pub insecure_http: bool,
    /// Origins a reverse proxy serves it under, accepted besides its own.
    pub origins: Vec<Origin>,
    /// The phone push, when `[push]` is configured.
    pub push: Option<push::PushOptions>,
}

impl WebOptions {
    /// The `[web]` config's, listening on `listen` when given; `None` when
    /// neither asks for the web surface.
    pub fn from_config(
        web: Option<&hark_core::config::Web>,
        listen: Option<SocketAddr>,
    ) -> Result<Option<WebOptions>, WebError> {
        let Some(listen) = listen.or(web.map(|w| w.listen)) else {
            return Ok(None);
        };
        let tls = match web.map(|w| (&w.tls_cert, &w.tls_key)) {
            Some((Some(cert), Some(key))) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            Some((None, None)) | None => None,
            Some(_) => return Err(WebError::HalfTls),
        };
        Ok(Some(WebOptions {
            listen,
            tls,
            insecure_http: false,
            origins: web
                .map(|w| w.origins.iter().map(|o| o.origin()).collect())
                .unwrap_or_default(),
            push: None,
        }))
    }
}

impl WebOptions {
    /// [`WebOptions::from_config`] with the config's `[push]` too: the web
    /// surface's options and the push's, or why the push cannot be (it
    /// needs the web surface and `[web] public_url`).
    pub fn from_whole_config(
        config: &hark_core::config::Config,
        listen: Option<SocketAddr>,
    ) -> Result<Option<WebOptions>, WebError> {
        let web = WebOptions::from_config(config.web.as_ref(), listen)?;
        let push = push::PushOptions::from_config(
            config.push.as_ref(),
            config.web.as_ref(),
            web.is_some(),
            hark_core::secrets::PushSecrets::load,
        )?;
        Ok(web.map(|web| WebOptions { push, ..web }))
    }
}

#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(
        "the web surface would listen on {0}, which is not a loopback address, over plain HTTP: \
         anyone on that network could read the questions and take the session cookies. \
         Give `[web] tls_cert` and `tls_key` in the config (HTTPS), or keep it on loopback and \
         reach it through `ssh -L`, `tailscale serve` or a TLS reverse proxy; \
         `--insecure-http` serves plain HTTP there anyway"
    )]
    PlainHttpOffLoopback(SocketAddr),
    #[error("one of `[web] tls_cert` and `tls_key` is set without the other")]
    HalfTls,
    #[error("the web surface cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("the web surface needs the daemon's store (paired devices live there)")]
    NoStore,
    #[error(transparent)]
    Push(#[from] push::PushError),
}

/// The web surface, serving.
#[derive(Debug)]
pub struct Serving {
    /// Where it listens (the port chosen, for `:0`).
    pub addr: SocketAddr,
    /// `http://ADDR` or `https://ADDR`.
    pub url: String,
    /// Ends once the server has stopped (see [`start`]).
    pub stopped: tokio::task::JoinHandle<()>,
}

/// How long the server waits, once stopping, for the requests it is
/// answering: then it ends whatever is left.
pub const DRAIN: Duration = Duration::from_secs(5);

/// What every handler shares.
#[derive(Debug)]
pub struct Web {
    pub registry: Registry,
    pub store: Arc<Store>,
    pub feed: feed::Feed,
    pub limiter: auth::Limiter,
    /// Failed push-button calls (a wrong, used or expired token), limited
    /// as pairings are.
    pub push_limiter: auth::Limiter,
    /// It is served over TLS: cookies are `Secure`.
    pub secure: bool,
    /// Where it listens, for the host check.
    pub listen: SocketAddr,
    pub origins: Vec<Origin>,
    /// Turns true when the daemon stops: the event streams end then, so
    /// the server's graceful shutdown is not held by them.
    pub stopping: watch::Receiver<bool>,
}

/// Checks `options` without binding: plain HTTP only on loopback (unless
/// the operator said otherwise), and a TLS certificate and key that load.
/// `hark doctor` says what this finds.
pub fn check(options: &WebOptions) -> Result<Option<Arc<rustls::ServerConfig>>, WebError> {
    if options.tls.is_none() && !options.listen.ip().is_loopback() && !options.insecure_http {
        return Err(WebError::PlainHttpOffLoopback(options.listen));
    }
    match &options.tls {
        Some(files) => Ok(Some(tls::config(files)?)),
        None => Ok(None),
    }
}

/// Binds `options.listen` and serves the web surface on the current tokio
/// runtime, with `registry` (and its store), until `stop` completes: then
/// it takes no new connection, ends its event streams, and gives the
/// requests it is answering [`DRAIN`] to finish (axum's graceful shutdown).
/// The daemon passes its own stop (`daemon.hosts.stopped()`), so the web
/// surface stops with its socket.
pub async fn start(
    registry: Registry,
    options: WebOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Serving, WebError> {
    let store = registry.store().cloned().ok_or(WebError::NoStore)?;
    let addr = options.listen;
    let tls = check(&options)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| WebError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| WebError::Bind { addr, source })?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let mut origins = options.origins;
    if let Some(push) = options.push {
        origins.push(push.origin());
        push::start(&registry, store.clone(), push)?;
    }
    let (stopping_tx, stopping) = watch::channel(false);
    let web = Arc::new(Web {
        feed: feed::Feed::start(&registry),
        registry,
        store,
        limiter: auth::Limiter::default(),
        push_limiter: auth::Limiter::default(),
        secure: tls.is_some(),
        listen: addr,
        origins,
        stopping: stopping.clone(),
    });
    let app = api::router(web).into_make_service_with_connect_info::<SocketAddr>();
    let stopped = tokio::spawn(async move {
        let stop = async move {
            stop.await;
            tracing::info!("web surface stopping");
            stopping_tx.send_replace(true);
        };
        let served = match tls {
            Some(tls) => tls::serve(listener, tls, app, stop).await,
            None => serve_plain(listener, app, stop).await,
        };
        match served {
            Ok(()) => tracing::info!("web surface stopped"),
            Err(e) => tracing::warn!("the web surface stopped: {e}"),
        }
    });
    tracing::info!(addr = %addr, url = %url, "web surface listening");
    Ok(Serving { addr, url, stopped })
}

/// The router as a server takes it, each request knowing its peer's address.
pub(crate) type App =
    axum::extract::connect_info::IntoMakeServiceWithConnectInfo<axum::Router, SocketAddr>;

/// Serves `app` over plain HTTP until `stop`, then drains for [`DRAIN`] at most.
async fn serve_plain(
    listener: tokio::net::TcpListener,
    app: App,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel();
    let stop = async move {
        stop.await;
        let _ = stopped_tx.send(());
    };
    let server = axum::serve(listener, app).with_graceful_shutdown(stop);
    let mut server = std::pin::pin!(std::future::IntoFuture::into_future(server));
    // Until asked to stop; then the drain, with its deadline.
    tokio::select! {
        served = &mut server => return served,
        Ok(()) = stopped_rx => {}
    }
    match tokio::time::timeout(DRAIN, server).await {
        Ok(served) => served,
        Err(_) => {
            tracing::warn!("the web surface's last requests did not end in {DRAIN:?}");
            Ok(())
        }
    }
}
