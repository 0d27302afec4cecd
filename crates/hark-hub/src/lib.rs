//! hark's team hub: the items of several hosts and the one reply that wins,
//! shared through NATS JetStream.
//!
//! A daemon with a hub ([`Hub::serve`]) publishes each item it is asked,
//! files every other host's item into its registry (so every surface shows
//! it, named with its host), and has every settlement decided on the hub
//! (see [`decide`]): whoever's reply the server takes first wins,
//! everywhere. An agent-only host (a CI runner, through `hark
//! mcp-operator-ask --hub`) does the same for its own items with an
//! agent's credential, which the server lets ask and read but never
//! answer (see [`credential`]).
//!
//! The wire records and the buckets are in [`wire`]. SQLite stays each
//! daemon's own history: the hub is not an audit log.

pub mod credential;
pub mod decide;
mod mirror;
pub mod read;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, kv};

pub use mirror::Serving;

/// Logged each time the client is (again) connected to the hub, with
/// `connections`, the count so far: the second is the first reconnection.
pub const CONNECTED: &str = "hub.connected";
/// Logged when the client loses the hub; it reconnects by itself.
pub const DISCONNECTED: &str = "hub.disconnected";

/// Whose credential the hub is reached with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An operator's daemon: asks, shows the team's items, answers.
    Operator,
    /// An agent-only host: asks, reads its answers, never answers.
    Agent,
}

/// This host's name on the hub when `[hub] host` does not say: the
/// system's host name.
pub fn this_host() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

/// How to reach the hub, and who this host is there.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// `nats://hub.example:4222` (or `tls://…`); several comma-separated.
    pub url: hark_core::config::HubUrls,
    /// An nkey seed file (`SU…`), the credential the server knows by its
    /// public key.
    pub nkey: Option<PathBuf>,
    /// A `.creds` file (a JWT and its seed), for servers run with accounts.
    pub creds: Option<PathBuf>,
    /// A CA certificate to trust for the server's TLS (the platform's roots
    /// otherwise); TLS is then required.
    pub ca: Option<PathBuf>,
    /// This host's name on the hub; unique in the team (its items and its
    /// clock's timeouts are its own).
    pub host: String,
    /// The operator's name their replies carry.
    pub operator: String,
    pub role: Role,
    /// How long a request to the server may take before its outcome is
    /// unknown.
    pub timeout: Duration,
    /// How many servers keep each bucket, when this host makes them.
    pub replicas: usize,
}

impl HubOptions {
    /// The default request timeout.
    pub const TIMEOUT: Duration = Duration::from_secs(5);

    /// From the config's `[hub]`, its URL replaced by `url` when given;
    /// `None` when neither names a server.
    pub fn from_config(
        hub: Option<&hark_core::config::Hub>,
        url: Option<hark_core::config::HubUrls>,
        role: Role,
    ) -> Option<HubOptions> {
        let hub = hub.cloned().unwrap_or_default();
        let url = url.or(hub.url)?;
        let host = hub.host.unwrap_or_else(this_host);
        let operator = hub.operator.unwrap_or_else(|| {
            ["USER", "USERNAME", "LOGNAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
                .unwrap_or_else(|| "operator".to_owned())
        });
        let nkey = hub.nkey.or_else(|| {
            let default = hark_core::config::Hub::default_nkey().ok()?;
            (hub.creds.is_none() && default.exists()).then_some(default)
        });
        Some(HubOptions {
            url,
            nkey,
            creds: hub.creds,
            ca: hub.ca,
            host,
            operator,
            role,
            timeout: HubOptions::TIMEOUT,
            replicas: hub.replicas.unwrap_or(1).max(1),
        })
    }
}

/// Why the hub could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("cannot read the hub credential {path}: {source}")]
    Credential {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the hub at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
    #[error(
        "the hub's buckets are not ready ({0}); an operator's daemon makes them on its first connect"
    )]
    Buckets(String),
    #[error("the hub refused the item: {0}")]
    Publish(String),
    #[error("reading the hub: {0}")]
    Read(String),
    #[error("the hub did not say who settled item {0}")]
    Undecided(hark_core::model::ids::ItemId),
    #[error("encoding a hub record: {0}")]
    Encode(serde_json::Error),
}

/// A connection to the hub, its buckets bound.
#[derive(Debug, Clone)]
pub struct Hub {
    js: jetstream::Context,
    /// Counts the client's connections: it changes when the server is
    /// back, which the retries of what the hub did not take wait for.
    connected: tokio::sync::watch::Receiver<u64>,
    /// The items a follower of this hub saw a decision put for: what a
    /// reply of unknown outcome waits on before reading the winner again.
    decided: tokio::sync::broadcast::Sender<hark_core::model::ids::ItemId>,
    items: kv::Store,
    decisions: kv::Store,
    options: std::sync::Arc<HubOptions>,
}

/// How many decision sightings a slow waiter may fall behind by (it then
/// reads the winner again, as it would on its own item's).
const DECIDED: usize = 256;

/// How long the hub keeps an item and its decision: a parked item waits
/// this long at most.
const KEEP: Duration = Duration::from_secs(30 * 24 * 3600);

impl Hub {
    /// Connects with the options' credential and binds the buckets (an
    /// operator's daemon makes them when they are missing).
    pub async fn connect(options: HubOptions) -> Result<Hub, HubError> {
        let unreachable = |reason: String| HubError::Unreachable {
            url: options.url.to_string(),
            reason,
        };
        let mut connect = match (&options.nkey, &options.creds) {
            (Some(path), _) => {
                let seed =
                    std::fs::read_to_string(path).map_err(|source| HubError::Credential {
                        path: path.clone(),
                        source,
                    })?;
                async_nats::ConnectOptions::with_nkey(seed.trim().to_owned())
            }
            (None, Some(path)) => async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|source| HubError::Credential {
                    path: path.clone(),
                    source,
                })?,
            (None, None) => async_nats::ConnectOptions::new(),
        };
        if let Some(ca) = &options.ca {
            connect = connect.add_root_certificates(ca.clone()).require_tls(true);
        }
        let (connections, connected) = tokio::sync::watch::channel(0u64);
        let connections = std::sync::Arc::new(connections);
        let client = connect
            .event_callback(move |event| {
                let connections = connections.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            connections.send_modify(|n| *n += 1);
                            let count = *connections.borrow();
                            tracing::info!(connections = count, "{CONNECTED}");
                        }
                        async_nats::Event::Disconnected => tracing::warn!("{DISCONNECTED}"),
                        _ => {}
                    }
                }
            })
            .name(format!("hark {} ({:?})", options.host, options.role))
            .custom_inbox_prefix(credential::inbox_prefix(options.role, &options.host))
            .connection_timeout(options.timeout)
            .request_timeout(Some(options.timeout))
            // Reconnects forever: a daemon outlives the hub's restarts.
            .max_reconnects(None)
            .connect(servers(&options.url).map_err(|e| unreachable(e.to_string()))?)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let mut js = jetstream::new(client);
        js.set_timeout(options.timeout);
        let (items, decisions) = match options.role {
            Role::Operator => (
                bucket(&js, wire::ITEMS, 1, options.replicas).await?,
                bucket(
                    &js,
                    wire::DECISIONS,
                    wire::DECISION_HISTORY,
                    options.replicas,
                )
                .await?,
            ),
            Role::Agent => (
                bound(&js, wire::ITEMS).await?,
                bound(&js, wire::DECISIONS).await?,
            ),
        };
        Ok(Hub {
            js,
            connected,
            decided: tokio::sync::broadcast::channel(DECIDED).0,
            items,
            decisions,
            options: std::sync::Arc::new(options),
        })
    }

    pub fn options(&self) -> &HubOptions {
        &self.options
    }

    /// How many times the client has connected so far.
    pub(crate) fn connections(&self) -> u64 {
        *self.connected.borrow()
    }

    /// Waits until the client has connected again since it had connected
    /// `seen` times (the server came back), or `patience` passes: for what
    /// the hub did not take while connected.
    pub(crate) async fn back(&self, seen: u64, patience: Duration) {
        let mut connected = self.connected.clone();
        let _ = tokio::time::timeout(patience, connected.wait_for(|n| *n > seen)).await;
    }
}

/// The servers a comma-separated URL list names.
/// The servers as the client takes them (their schemes were checked when
/// the config or `--hub` was read).
fn servers(
    urls: &hark_core::config::HubUrls,
) -> Result<Vec<async_nats::ServerAddr>, async_nats::ConnectError> {
    urls.urls()
        .iter()
        .map(|u| {
            async_nats::ServerAddr::from_url(u.clone()).map_err(|e| {
                async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::ServerParse, e)
            })
        })
        .collect()
}

/// The bucket, made when missing.
async fn bucket(
    js: &jetstream::Context,
    name: &str,
    history: i64,
    replicas: usize,
) -> Result<kv::Store, HubError> {
    if let Ok(store) = js.get_key_value(name).await {
        widen(js, &store, history).await?;
        return Ok(store);
    }
    js.create_key_value(kv::Config {
        bucket: name.to_owned(),
        history,
        max_age: KEEP,
        num_replicas: replicas,
        ..Default::default()
    })
    .await
    .map_err(|e| HubError::Buckets(e.to_string()))
}

/// Makes an existing bucket keep `history` values a key, when it keeps
/// fewer (made by an earlier hark, or by hand).
async fn widen(js: &jetstream::Context, store: &kv::Store, history: i64) -> Result<(), HubError> {
    let info = store
        .stream
        .get_info()
        .await
        .map_err(|e| HubError::Buckets(e.to_string()))?;
    if info.config.max_messages_per_subject >= history {
        return Ok(());
    }
    let mut config = info.config;
    config.max_messages_per_subject = history;
    js.update_stream(config).await.map(|_| ()).map_err(|e| {
        HubError::Buckets(format!(
            "{}: keeping {history} values a key: {e}",
            store.name
        ))
    })
}

/// The bucket, which must exist.
async fn bound(js: &jetstream::Context, name: &str) -> Result<kv::Store, HubError> {
    js.get_key_value(name)
        .await
        .map_err(|e| HubError::Buckets(format!("{name}: {e}")))
}
