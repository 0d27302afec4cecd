//! Putting the daemon together: the config, the bound app socket, the
//! store and the registry, with a prompter as the operator. `hark serve`
//! and the desktop app both start here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::bridge::relay::RunDir;
use crate::bridge::socket::{self, SocketError};
use crate::config::{Config, ConfigError};
use crate::daemon::state::Daemon;
use crate::model::ids::Clock;
use crate::prompter::OperatorPrompter;
use crate::registry::Registry;
use crate::store::paused::Paused;
use crate::store::{Store, StoreError};

/// How the daemon serves; every field has a default.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The socket to serve; the app socket when `None`.
    pub socket: Option<PathBuf>,
    /// The default bounded wait; the config's when `None`.
    pub ask_timeout: Option<Duration>,
    /// Require a default on every question (on top of the config's switch).
    pub strict_defaults: bool,
    /// Variables the caller set in its own environment, taken out of the
    /// runs it dispatches (see [`Dispatcher::own_env`]).
    pub own_env: Vec<&'static str>,
    /// The store file; `$HARK_DATA_DIR/hark.db` (or the platform's) when
    /// `None`. Another daemon's store must not be shared: opening a store
    /// closes out the items it left pending.
    pub store: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no place for the store: {0}; set HARK_DATA_DIR")]
    NoStorePath(crate::files::NoHomeError),
}

/// The core, ready to serve: a bound socket, the store, the registry.
#[derive(Debug)]
pub struct Prepared {
    pub listener: crate::platform::Listener,
    /// Removes the socket file when dropped.
    pub socket_file: socket::SocketFile,
    pub daemon: Daemon,
    /// The config it was prepared with.
    pub config: Config,
}

/// Loads the config, binds the socket and opens the store, with `prompter`
/// as the operator. Shared by `hark serve` and the desktop app. Must run
/// inside a tokio runtime.
pub fn prepare(
    prompter: Arc<dyn OperatorPrompter>,
    options: ServeOptions,
) -> Result<Prepared, ServeError> {
    let config = Config::load()?;
    for secret in config.inline_secrets() {
        tracing::warn!(
            secret,
            "the config holds a secret inline: anyone the file is shared with, and any agent not confined, reads it; `hark push setup` keeps it in the data directory instead (then remove it from the config)"
        );
    }
    socket::raise_open_file_limit();
    let path = match options.socket {
        Some(path) => path,
        None => socket::app_socket_path()?,
    };
    let (listener, socket_file) = socket::bind(&path)?;
    RunDir::sweep();
    let store_path = match options.store {
        Some(path) => path,
        None => Store::default_path().map_err(ServeError::NoStorePath)?,
    };
    let store = Arc::new(Store::open(&store_path, Clock::system())?);
    let registry = Registry::with_store(Some(store));
    // The parked items wait on, for the operator, across the restart.
    let parked = registry.restore_parked()?;
    if parked > 0 {
        tracing::info!(items = parked, "parked items wait for the operator again");
    }
    tokio::spawn(keep_history(registry.clone(), config.history_limit));
    let mut daemon = Daemon::new(
        registry,
        prompter,
        &config,
        socket_file.path().to_owned(),
        store_path.with_file_name("runs"),
    );
    daemon.rules.strict_defaults |= options.strict_defaults;
    if let Some(timeout) = options.ask_timeout {
        daemon.default_timeout = timeout;
    }
    daemon.dispatcher.own_env = options.own_env;
    tracing::info!(
        socket = %socket_file.path().display(),
        timeout_s = daemon.default_timeout.as_secs(),
        "hark is serving the operator"
    );
    crate::daemon::parked::prompt_parked(&daemon);
    crate::daemon::resumer::Resumer::new(
        Paused::beside(&store_path),
        daemon.registry.clone(),
        daemon.dispatcher.clone(),
    )
    .start();
    Ok(Prepared {
        listener,
        socket_file,
        daemon,
        config,
    })
}

/// How many settlements pass between two trims of the history.
const TRIM_EVERY: u32 = 100;

/// Keeps the settled history within `limit` items, trimming now and then.
async fn keep_history(registry: Registry, limit: u64) {
    let Some(store) = registry.store().cloned() else {
        return;
    };
    let mut events = registry.subscribe();
    let mut settled = TRIM_EVERY;
    loop {
        if settled >= TRIM_EVERY {
            settled = 0;
            match store
                .prune_settled(limit)
                .and_then(|items| store.prune_runs(limit).map(|runs| (items, runs)))
            {
                Ok((0, 0)) => {}
                Ok((items, runs)) => {
                    tracing::info!(items, runs, limit, "trimmed the inbox history")
                }
                Err(e) => tracing::warn!("could not trim the inbox history: {e}"),
            }
        }
        match events.recv().await {
            Ok(crate::registry::Event::Settled { .. }) => settled += 1,
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => settled += n as u32,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Completes on Ctrl-C, or when the console closes or the system shuts down.
#[cfg(windows)]
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::windows::{ctrl_c, ctrl_close, ctrl_shutdown};
    let mut int = ctrl_c().ok();
    let mut close = ctrl_close().ok();
    let mut down = ctrl_shutdown().ok();
    async move {
        tokio::select! {
            Some(_) = async { int.as_mut()?.recv().await } => {}
            Some(_) = async { close.as_mut()?.recv().await } => {}
            Some(_) = async { down.as_mut()?.recv().await } => {}
            else => std::future::pending::<()>().await,
        }
        tracing::info!("hark is shutting down");
    }
}

/// Completes on SIGINT or SIGTERM.
#[cfg(unix)]
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    // Taken now, not when first awaited: a signal that arrives in between
    // (the daemon has said it serves, and a service manager stops it at
    // once) is handled, not fatal.
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    async move {
        tokio::select! {
            Some(_) = async { int.as_mut()?.recv().await } => {}
            Some(_) = async { term.as_mut()?.recv().await } => {}
            else => std::future::pending::<()>().await,
        }
        tracing::info!("hark is shutting down");
    }
}
