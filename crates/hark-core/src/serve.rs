//! `hark serve`: the headless daemon. It owns the app socket, the registry
//! and a terminal or scripted prompter, until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::bridge::{self, Bridge, Gate};
use crate::config::{Config, ConfigError};
use crate::dispatcher::Dispatcher;
use crate::prompter::OperatorPrompter;
use crate::registry::Registry;
use crate::script::{ScriptError, ScriptedPrompter};
use crate::socket::{self, SocketError};
use crate::store::{Store, StoreError};
use crate::terminal::TerminalPrompter;

/// Who answers: `terminal` or `script:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrompterChoice {
    Terminal,
    Script(PathBuf),
}

impl FromStr for PrompterChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            None if s == "terminal" => Ok(PrompterChoice::Terminal),
            Some(("script", path)) if !path.is_empty() => Ok(PrompterChoice::Script(path.into())),
            _ => Err(format!(
                "unknown prompter {s:?}: use `terminal` or `script:PATH`"
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub prompter: PrompterChoice,
    /// The socket to serve; the app socket when `None`.
    pub socket: Option<PathBuf>,
    /// The default bounded wait; the config's when `None`.
    pub ask_timeout: Option<Duration>,
    /// Require a default on every question (on top of the config's switch).
    pub strict_defaults: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no place for the store: set HARK_DATA_DIR")]
    NoStorePath,
}

/// The core, ready to serve: a bound socket, the store, the registry.
#[derive(Debug)]
pub struct Prepared {
    pub listener: tokio::net::UnixListener,
    /// Removes the socket file when dropped.
    pub socket_file: socket::SocketFile,
    pub bridge: Bridge,
    /// The config it was prepared with.
    pub config: Config,
}

/// Loads the config, binds the socket and opens the store, with `prompter`
/// as the operator. Shared by `hark serve` and the desktop app. Must run
/// inside a tokio runtime.
pub fn prepare(
    prompter: Arc<dyn OperatorPrompter>,
    socket: Option<PathBuf>,
    ask_timeout: Option<Duration>,
    strict_defaults: bool,
) -> Result<Prepared, ServeError> {
    let config = Config::load()?;
    socket::raise_open_file_limit();
    let path = match socket {
        Some(path) => path,
        None => socket::app_socket_path()?,
    };
    let (listener, socket_file) = socket::bind(&path)?;
    let store_path = Store::default_path().ok_or(ServeError::NoStorePath)?;
    let store = Arc::new(Store::open(&store_path)?);
    let mut rules = config.rules();
    rules.strict_defaults |= strict_defaults;
    let registry = Registry::with_store(Some(store));
    tokio::spawn(keep_history(registry.clone(), config.history_limit));
    let bridge = Bridge {
        registry: registry.clone(),
        prompter,
        default_timeout: ask_timeout.unwrap_or_else(|| config.ask_timeout()),
        rules,
        gate: Arc::new(Gate::new(config.approvals.clone())),
        dispatcher: Dispatcher {
            hark: Dispatcher::sibling_hark(),
            socket: socket_file.path().to_owned(),
            logs: store_path.with_file_name("runs"),
            registry: registry.clone(),
            own_env: Vec::new(),
            log_limit: config.run_log_limit,
        },
    };
    tracing::info!(
        socket = %socket_file.path().display(),
        timeout_s = bridge.default_timeout.as_secs(),
        "hark is serving the operator"
    );
    Ok(Prepared {
        listener,
        socket_file,
        bridge,
        config,
    })
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn serve(options: ServeOptions) -> Result<(), ServeError> {
    let prompter: Arc<dyn OperatorPrompter> = match &options.prompter {
        PrompterChoice::Terminal => Arc::new(TerminalPrompter::new()),
        PrompterChoice::Script(path) => Arc::new(ScriptedPrompter::load(path)?),
    };
    let prepared = prepare(
        prompter,
        options.socket,
        options.ask_timeout,
        options.strict_defaults,
    )?;
    eprintln!(
        "hark: serving on {} — agents started with `--mcp-config \"$(hark mcp-config)\"` ask here",
        prepared.socket_file.path().display()
    );
    bridge::run(prepared.listener, prepared.bridge, shutdown_signal()).await;
    drop(prepared.socket_file);
    Ok(())
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

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        Some(_) = async { term.as_mut()?.recv().await } => {}
    }
    tracing::info!("hark is shutting down");
}
