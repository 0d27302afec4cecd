//! Every `HARK_*` environment variable hark reads or sets, named once.
//!
//! Without `HARK_DATA_DIR` and `HARK_SOCKET` the store (and, with no
//! `XDG_RUNTIME_DIR`, the socket) lives under your home directory. If
//! `HOME` names a directory that does not exist (a service's, a
//! container's), hark does not create it: it says `the home directory …
//! does not exist, and hark does not create it` and what to set instead
//! (`HARK_DATA_DIR`; `HARK_SOCKET` or `XDG_RUNTIME_DIR`).

/// The app socket (default `$XDG_RUNTIME_DIR/hark/hark.sock`).
pub const SOCKET: &str = "HARK_SOCKET";
/// A per-call socket for `mcp-operator-ask`, set by a dispatcher; wins over
/// [`SOCKET`].
pub const ASK_SOCK: &str = "HARK_ASK_SOCK";
/// The agent session the questions are filed under.
pub const SESSION_ID: &str = "HARK_SESSION_ID";
/// This agent's bounded wait, in seconds (`hark run` sets it from its
/// `--timeout` only); unset, the daemon's applies.
pub const ASK_TIMEOUT: &str = "HARK_ASK_TIMEOUT";
/// How often `mcp-operator-ask` sends a progress notification while it
/// waits, in milliseconds (default 15 000: some hosts cut a silent tool
/// call at 60 s).
pub const PROGRESS_INTERVAL_MS: &str = "HARK_PROGRESS_INTERVAL_MS";
/// The run id a `hark run` dispatched by the daemon takes.
pub const RUN_ID: &str = "HARK_RUN_ID";
/// Set by whoever starts a `hark run` that must not outlive it (the
/// studio): the run takes its parent's death as a stop signal.
pub const STOP_WITH_PARENT: &str = "HARK_STOP_WITH_PARENT";
/// Where the store (`hark.db`) and the run logs live.
pub const DATA_DIR: &str = "HARK_DATA_DIR";
/// Set inside a confined run to the mechanism's name (`bubblewrap`): what
/// the agent and its tools can tell of their confinement.
pub const CONFINED: &str = "HARK_CONFINED";
/// The config file (default: the platform config directory's
/// `hark/config.toml`).
pub const CONFIG: &str = "HARK_CONFIG";
/// The log level: `error`, `warn`, `info`, `debug`, `trace`.
pub const LOG: &str = "HARK_LOG";
/// `json` makes the desktop app log (and trace) as JSON lines.
pub const LOG_FORMAT: &str = "HARK_LOG_FORMAT";

/// Set by the desktop app in the environment of a window process it starts
/// ahead of time: the process waits until its channel has something before
/// it builds a window (Linux).
pub const WINDOW_DORMANT: &str = "HARK_WINDOW_DORMANT";

/// A variable's value, when it is set and not empty.
pub fn var_os(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The team's hub to join, over the config's `[hub] url` (`hark app --hub`
/// hands it to the app this way).
pub const HUB: &str = "HARK_HUB";
