//! hark's config file (TOML, in the platform config dir; `HARK_CONFIG`
//! overrides the path). A missing file means the defaults.
//!
//! ```toml
//! ask_timeout_secs = 300   # the bounded wait for an answer
//! strict_defaults = false  # require a pre-picked default on every question
//! history_limit = 10000    # settled items (and ended runs) kept in the history
//! run_log_limit = 100      # dispatched runs whose output is kept (the newest)
//! agent_command = "claude" # the agent `hark run` starts
//! agent_kind = "claude"    # claude or codex: the command line hark composes (default: from agent_command's name)
//! window_release_secs = 30 # the desktop app frees its hidden window (and its web process) this long after nothing waits
//! theme = "system"         # the desktop window's colours: system (follow the desktop's light or dark preference), light or dark
//! studio_reflex_ms = 750   # `hark mcp-studio`: an elicitation declined or cancelled quicker than this was seen by nobody (a headless client)
//!
//! [notifications]          # how the desktop app announces a new item
//! do_not_disturb = false   # start silenced: no notification, no modal popping up
//! buttons = true           # answer a short single-select question from its notification
//! urgency = "normal"       # low, normal or critical, as the notification server is told
//!
//! [confine]                # what `hark run` starts runs where hark's socket, store, config and secret files do not exist
//! enabled = true           # `hark run --no-confine` turns it off for one run
//! display = false          # leave the X/Wayland display reachable inside
//! session_bus = false      # leave the session bus reachable inside
//!
//! [web]                    # the web surface (`hark serve --web ADDR` without it); off when absent
//! listen = "127.0.0.1:8787" # loopback by default; another address needs TLS (or `--insecure-http`)
//! tls_cert = "/path/cert.pem" # PEM certificate chain and key: served over HTTPS (rustls)
//! tls_key = "/path/key.pem"
//! origins = ["https://hark.example.ts.net"] # origins a reverse proxy serves it under, besides its own
//! public_url = "https://hark.example.ts.net" # where a phone reaches it: the push's buttons and click go there
//!
//! [push]                   # a phone push per new item through ntfy (needs `[web]` with `public_url`)
//! ntfy = { server = "https://ntfy.sh" } # the topic and token are secrets: `hark push setup` keeps them in the data directory
//! detail = "title-only"    # title-only (the agent and project, no question text) or full (the question and its options)
//!
//! [hub]                    # the team's hub (NATS JetStream); off when absent
//! url = "nats://hub.example:4222" # or tls://…; `--hub URL` without it
//! nkey = "/path/alice.nk"  # this host's nkey seed (default: hub.nk in the data dir, where `hark hub credential` puts it); or creds = "/path/x.creds"
//! ca = "/path/ca.pem"      # trust this CA for the server's TLS (then TLS is required)
//! host = "devbox"          # this host's name on the hub, unique in the team (default: the hostname)
//! operator = "alice"       # the name your replies carry (default: the user name)
//! replicas = 3             # servers that keep each bucket, when this daemon makes them (default 1)
//!
//! [approvals]              # the write-mode gate (`hark run --read-only`); adds to its defaults
//! read_only_tools = ["MyViewer"]                  # tools that pass unasked
//! external_effects = ["make deploy"]              # asked every time, never granted longer
//!
//! [[approvals.read_only_commands]]                # Bash that passes unasked…
//! command = "git shortlog"                        # …this command (words; `git` may carry -C DIR)
//! flags = ["-s", "-n", "--summary"]               # …with only these flags (`-sn` combines)
//! value_flags = ["--since"]                       # …and these, each taking a value
//! max_operands = 1                                # …and at most one other word (no limit if left out)
//! numeric_flag = false                            # whether `-5` is allowed
//! ```
//!
//! The gate's defaults are `gate/defaults.toml`, in the same shape. An entry
//! naming `hark`, or a path, or a writing tool (`Bash`, `Edit`, …) as
//! read-only, is refused when the config loads.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::gate::policy::Policy;
use crate::model::validate::Rules;
use crate::secrets::{PushSecrets, SecretsError};

mod urls;
pub use urls::{Host, HttpUrl, HubUrls, Origin, Url, UrlError, WebOrigin};

/// The default bounded wait (SPEC §4).
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// The keys at the config file's top level, and its tables.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// How long the operator has to answer, in seconds.
    pub ask_timeout_secs: u64,
    /// Every question must carry a default.
    pub strict_defaults: bool,
    /// How many settled items, and how many ended runs, the history keeps
    /// (the newest).
    pub history_limit: u64,
    /// How many of the runs the daemon dispatched keep their output log
    /// (the newest; a running run's log is always kept).
    pub run_log_limit: u64,
    /// The agent `hark run` starts (default: `claude` on PATH).
    pub agent_command: Option<std::path::PathBuf>,
    /// Which CLI the agent is (default: what the command's name says).
    pub agent_kind: Option<crate::agent::AgentKind>,
    /// How long the desktop app keeps its hidden window once nothing waits,
    /// in seconds; then it is released, WebKit's web process with it, and
    /// built again for the next question.
    pub window_release_secs: u64,
    /// The desktop window's colours.
    pub theme: Theme,
    /// `hark mcp-studio`: an elicitation declined or cancelled within this
    /// many milliseconds was answered by no person (several clients cancel
    /// every elicitation in their headless modes); the studio hands that
    /// question over as `awaiting_operator` and elicits no more.
    pub studio_reflex_ms: u64,
    /// How the desktop app announces a new item.
    pub notifications: Notifications,
    /// What the write-mode gate lets pass, asks about, and asks every time.
    #[serde(skip_serializing)]
    pub approvals: Policy,
    /// What a question of a run hark dispatched does when nobody answers
    /// within the bounded wait: park the agent until you do, or let it
    /// proceed without the answer.
    pub on_timeout: OnTimeout,
    /// Where what `hark run` starts runs: hark's socket, store and config
    /// out of its reach, and whether the display and the session bus stay.
    pub confine: Confine,
    /// The web surface, when configured (the app then serves it too).
    pub web: Option<Web>,
    /// A phone push for each new item, through ntfy (needs `web`).
    pub push: Option<Push>,
    /// The team's hub, when configured.
    pub hub: Option<Hub>,
}

impl Hub {
    /// Where `hark hub credential` keeps this host's seed, and where it is
    /// read from when `nkey` is not set: the data directory, which what
    /// `hark run` confines does not see (the config directory it can read).
    pub fn default_nkey() -> Result<PathBuf, crate::files::NoHomeError> {
        Ok(crate::store::Store::default_path()?.with_file_name("hub.nk"))
    }
}

/// The `[hub]` part of the config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hub {
    /// The NATS server(s): `nats://host:4222`, `tls://…`, comma-separated,
    /// each with its scheme (checked when the config loads).
    #[serde(default)]
    pub url: Option<HubUrls>,
    /// This host's nkey seed file.
    #[serde(default)]
    pub nkey: Option<PathBuf>,
    /// A NATS `.creds` file, for servers run with accounts.
    #[serde(default)]
    pub creds: Option<PathBuf>,
    /// A CA certificate for the server's TLS.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// This host's name on the hub (default: the hostname).
    #[serde(default)]
    pub host: Option<String>,
    /// The operator's name (default: the user name).
    #[serde(default)]
    pub operator: Option<String>,
    /// How many servers of a cluster keep each bucket, when this daemon
    /// makes them (the first operator's daemon to connect does): 3 on a
    /// three-node cluster, so one node down loses nothing.
    #[serde(default)]
    pub replicas: Option<usize>,
}

/// The `[push]` part of the config.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Push {
    /// The ntfy server to publish to (`ntfy = { server = "https://ntfy.sh" }`).
    pub ntfy: Ntfy,
    /// How much of an item a push carries.
    #[serde(default)]
    pub detail: PushDetail,
}

/// An ntfy server and topic to publish to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ntfy {
    /// The server's root (`https://ntfy.sh`, or a self-hosted one).
    #[serde(default = "Ntfy::default_server")]
    pub server: HttpUrl,
    /// The topic the phone subscribes to: on a public server, whoever
    /// knows it reads the pushes, so it is a secret, kept with the token in
    /// the data directory by `hark push setup` (`push.toml`); one given
    /// here is used, with a warning.
    #[serde(default)]
    pub topic: String,
    /// An access token (`Authorization: Bearer`), for a topic that needs one.
    #[serde(default)]
    pub token: Option<String>,
}

impl Ntfy {
    /// `https://ntfy.sh`.
    pub fn default_server() -> HttpUrl {
        "https://ntfy.sh".parse().expect("ntfy.sh's URL")
    }

    /// This server with the topic and token not given here filled in from
    /// where `hark push setup` keeps them (`kept`: the data directory's,
    /// read only when one is missing).
    pub fn with_kept(
        &self,
        kept: impl FnOnce() -> Result<Option<PushSecrets>, SecretsError>,
    ) -> Result<Ntfy, SecretsError> {
        let mut ntfy = self.clone();
        if (ntfy.topic.is_empty() || ntfy.token.is_none())
            && let Some(kept) = kept()?
        {
            if ntfy.topic.is_empty() {
                ntfy.topic = kept.topic;
            }
            ntfy.token = ntfy.token.or(kept.token);
        }
        Ok(ntfy)
    }
}

/// How much of an item a push carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushDetail {
    /// Who asks (the agent, the project, the session), nothing the agent
    /// wrote: no question text, no option labels (so a question gets no
    /// buttons, only the click; an approval gets Allow and Deny).
    #[default]
    TitleOnly,
    /// The question's header and text, and its options as buttons.
    Full,
}

/// The `[web]` part of the config.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Web {
    /// Where it listens: loopback unless TLS is configured.
    #[serde(default = "Web::default_listen")]
    pub listen: std::net::SocketAddr,
    /// A PEM certificate chain and its key: with both, it serves HTTPS.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `tls_cert` (PEM).
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Origins it is reached under through a reverse proxy
    /// (`https://box.tailnet.ts.net`), accepted besides its own: each
    /// `scheme://host[:port]` with no path (checked when the config loads).
    #[serde(default)]
    pub origins: Vec<WebOrigin>,
    /// The address a phone reaches it at (`https://box.tailnet.ts.net`,
    /// through a proxy or `tailscale serve`): where a push's buttons and
    /// click go. Its origin is accepted as `origins` are.
    #[serde(default)]
    pub public_url: Option<HttpUrl>,
}

impl Web {
    /// `127.0.0.1:8787`.
    pub fn default_listen() -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], 8787))
    }
}

/// The `[confine]` part of the config.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Confine {
    /// Confine what hark starts (`hark run --no-confine` turns it off for
    /// one run).
    pub enabled: bool,
    /// Leave the X or Wayland display reachable inside (an agent that
    /// drives a browser it shows): it can then send the app synthetic input.
    pub display: bool,
    /// Leave the session bus reachable inside (a keyring's Secret Service,
    /// a credential helper on D-Bus): it can then drive the notification
    /// server's own controls (`dunstctl action`), which press hark's buttons.
    pub session_bus: bool,
}

impl Default for Confine {
    fn default() -> Confine {
        Confine {
            enabled: true,
            display: false,
            session_bus: false,
        }
    }
}

/// What happens to a dispatched run's question nobody answers in time.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// The agent is paused (it exits, saved) and resumed with your answer,
    /// however late: silence is never consent.
    #[default]
    Park,
    /// The agent gets the not-answered error and goes on (a CI job that
    /// must finish).
    Proceed,
}

/// The desktop window's colours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// The desktop's light or dark preference (`prefers-color-scheme`).
    #[default]
    System,
    /// Light, whatever the desktop prefers.
    Light,
    /// Dark, whatever the desktop prefers.
    Dark,
}

/// How the desktop app announces a new item.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Notifications {
    /// Start with do-not-disturb on: no notification and no modal popping
    /// up; the inbox and the tray still count every item. The tray toggles it.
    pub do_not_disturb: bool,
    /// A single-select question with up to three options can be answered
    /// from its notification's buttons.
    pub buttons: bool,
    /// The urgency the notification server is told (a critical notification
    /// stays on screen until dismissed, on most servers).
    pub urgency: Urgency,
}

impl Default for Notifications {
    fn default() -> Self {
        Notifications {
            do_not_disturb: false,
            buttons: true,
            urgency: Urgency::Normal,
        }
    }
}

/// The freedesktop notification urgency levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    /// Shown quietly (some servers only list it).
    Low,
    /// As any other application's notification.
    Normal,
    /// Stays on screen until dismissed, on most servers.
    Critical,
}

impl Urgency {
    /// The `urgency` hint's byte.
    pub fn level(self) -> u8 {
        match self {
            Urgency::Low => 0,
            Urgency::Normal => 1,
            Urgency::Critical => 2,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ask_timeout_secs: DEFAULT_ASK_TIMEOUT.as_secs(),
            strict_defaults: false,
            history_limit: 10_000,
            run_log_limit: 100,
            agent_command: None,
            agent_kind: None,
            window_release_secs: 30,
            theme: Theme::System,
            studio_reflex_ms: 750,
            notifications: Notifications::default(),
            approvals: Policy::default(),
            on_timeout: OnTimeout::default(),
            confine: Confine::default(),
            web: None,
            push: None,
            hub: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the config {} is not valid: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
}

impl Config {
    /// Where the config file is read from.
    pub fn path() -> Option<PathBuf> {
        if let Some(path) = crate::env::var_os(crate::env::CONFIG) {
            return Some(PathBuf::from(path));
        }
        directories::ProjectDirs::from("", "", "hark").map(|d| d.config_dir().join("config.toml"))
    }

    /// Loads the config file; a missing one is the defaults.
    pub fn load() -> Result<Config, ConfigError> {
        match Config::read()? {
            Some((path, text)) => {
                toml::from_str(&text).map_err(|source| ConfigError::Parse { path, source })
            }
            None => Ok(Config::default()),
        }
    }

    /// The config file's path and text; `None` when there is none.
    fn read() -> Result<Option<(PathBuf, String)>, ConfigError> {
        let Some(path) = Config::path() else {
            return Ok(None);
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some((path, text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// The part of the config file the agent's side of hark reads
    /// (`mcp-operator-ask`'s rules, the write-mode gate's policy), as TOML:
    /// what `hark run` hands its agent in place of the whole file, which
    /// names or holds the operator's secrets. A missing file is empty.
    pub fn agent_part() -> Result<String, ConfigError> {
        match Config::read()? {
            Some((path, text)) => {
                agent_part_of(&text).map_err(|source| ConfigError::Parse { path, source })
            }
            None => Ok(String::new()),
        }
    }

    /// The secrets the file holds inline, by where they are (`[push]
    /// ntfy.token`): `hark serve`, the app and `hark doctor` say how to
    /// move them out.
    pub fn inline_secrets(&self) -> Vec<&'static str> {
        let Some(push) = &self.push else {
            return Vec::new();
        };
        let topic = (!push.ntfy.topic.is_empty()).then_some("[push] ntfy.topic");
        let token = push.ntfy.token.is_some().then_some("[push] ntfy.token");
        topic.into_iter().chain(token).collect()
    }

    /// The files of secrets the config names: the web surface's TLS key,
    /// the hub's nkey seed or `.creds` (where they are named; the defaults
    /// are in the data directory).
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let web = self.web.iter().flat_map(|w| w.tls_key.clone());
        let hub = self
            .hub
            .iter()
            .flat_map(|h| h.nkey.iter().chain(&h.creds).cloned());
        web.chain(hub).collect()
    }

    pub fn ask_timeout(&self) -> Duration {
        Duration::from_secs(self.ask_timeout_secs.max(1))
    }

    pub fn rules(&self) -> Rules {
        Rules {
            strict_defaults: self.strict_defaults,
        }
    }
}

/// The keys of the config the agent's side of hark reads.
pub const AGENT_KEYS: [&str; 2] = ["strict_defaults", "approvals"];

/// `text` with only [`AGENT_KEYS`] kept.
fn agent_part_of(text: &str) -> Result<String, toml::de::Error> {
    // Checked as a whole first: a config the operator's side refuses is
    // not handed on in part.
    toml::from_str::<Config>(text)?;
    let mut table: toml::Table = toml::from_str(text)?;
    table.retain(|key, _| AGENT_KEYS.contains(&key));
    Ok(table.to_string())
}

#[cfg(test)]
mod tests;
