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
//!   request carries besides), the origin and host checks, and the limit
//!   on failed pairings.
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
pub mod push;
mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use hark_core::registry::Registry;
use hark_core::store::Store;

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
    pub origins: Vec<String>,
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
            origins: web.map(|w| w.origins.clone()).unwrap_or_default(),
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
}

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
    pub origins: Vec<String>,
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
/// runtime until it ends, with `registry` (and its store).
pub async fn start(registry: Registry, options: WebOptions) -> Result<Serving, WebError> {
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
    let web = Arc::new(Web {
        feed: feed::Feed::start(&registry),
        registry,
        store,
        limiter: auth::Limiter::default(),
        push_limiter: auth::Limiter::default(),
        secure: tls.is_some(),
        listen: addr,
        origins,
    });
    let app = api::router(web);
    match tls {
        Some(tls) => tls::serve(listener, tls, app),
        None => {
            tokio::spawn(async move {
                let service = app.into_make_service_with_connect_info::<SocketAddr>();
                if let Err(e) = axum::serve(listener, service).await {
                    tracing::warn!("the web surface stopped: {e}");
                }
            });
        }
    }
    tracing::info!(addr = %addr, url = %url, "web surface listening");
    Ok(Serving { addr, url })
}
