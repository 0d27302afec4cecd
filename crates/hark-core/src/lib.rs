//! hark's core: everything between an agent's question and the operator's
//! answer, with no GUI and no terminal, so it builds and tests fast. It
//! prints nothing: it returns typed values and errors, and the `hark`
//! binary's commands and the desktop shell show them.
//!
//! # Layout
//! - [`model`]: AskUserQuestion's shapes, the checks on a call, answer
//!   resolution, the items that wait on the operator and what approvals ask,
//!   runs, the typed ids, and where new ids and the wall clock come from.
//! - [`gate`]: the write-mode gate of a read-only run (policy, the Bash
//!   parser and the per-command flag rules it checks, grants, verdicts) and
//!   the intake asked before a run starts.
//! - [`registry`]: the pending items, their deadlines, and the one set of
//!   reply rules every surface goes through; the writes the store refused,
//!   held until it takes them, and the store's health.
//! - [`store`]: the SQLite inbox: items, runs, sessions, the web's paired
//!   devices. [`pairing`]: a device's one-time code, session and CSRF
//!   token (the HTTP itself is the `hark-web` crate's).
//! - [`bridge`]: the socket protocol and its client side (frames, the views
//!   of store rows that cross it and their clipped listing copies,
//!   owner-only sockets, the client, the per-run relay).
//! - [`daemon`]: the serving side: the listener, the operator's requests
//!   (listings paged by bytes, items fetched whole), the runs the daemon
//!   dispatches, and the assembly for `hark serve` and the desktop app.
//! - [`agent`]: composing an agent's command line (`claude -p`, `codex
//!   exec`) with the bridge attached exactly when someone can answer, and
//!   the config other MCP clients need for it.
//! - [`confine`]: where what `hark run` starts runs — the operator's
//!   places (socket, store, config, display, bus) out of its world — as
//!   bubblewrap's command line on Linux and a Seatbelt profile on macOS.
//! - [`autostart`]: the XDG autostart entry that starts the app at login.
//! - [`prompter`]: the `OperatorPrompter` seam and the scripted prompter
//!   (the terminal's lives in the `hark` binary, the desktop's in
//!   `src-tauri`).
//! - [`env`], [`files`], [`config`], [`trace`], [`text`]: the `HARK_*`
//!   variables, owner-only directories, the config file, trace events and
//!   logging, cutting text to a length and weighing it as JSON.
//!
//! Data flows one way: an asker's frame reaches the [`daemon`] through the
//! [`bridge`], becomes an item in the [`registry`] (persisted by the
//! [`store`]), is put to the operator by a [`prompter`] or answered by
//! another surface through the same rules, and its outcome goes back down
//! the socket. Lower layers never name higher ones: `model` and `gate` know
//! nothing of sockets, the `store` nothing of frames, the `bridge` nothing of
//! the daemon.

// The core prints nothing: what it has to say goes to its callers as
// values, or to the log as trace events (the surfaces decide where).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod autostart;
pub mod bridge;
pub mod config;
pub mod confine;
pub mod daemon;
pub mod env;
pub mod files;
pub mod gate;
pub mod model;
pub mod pairing;
pub mod platform;
pub mod prompter;
pub mod registry;
pub mod secrets;
pub mod store;
pub mod text;
pub mod trace;
