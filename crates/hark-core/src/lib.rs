//! hark's core: everything between an agent's question and the operator's
//! answer, with no GUI dependency, so it builds and tests fast.
//!
//! # Layout
//! - [`schema`], [`validate`], [`resolve`]: AskUserQuestion's shapes, the
//!   checks on a call, and turning the operator's picks into answers.
//! - [`item`], [`registry`]: pending items, their deadlines and outcomes.
//! - [`prompter`]: the `OperatorPrompter` seam, with [`script`] and
//!   [`terminal`] implementations (the desktop one lives in `src-tauri`).
//! - [`wire`], [`socket`], [`bridge`], [`client`]: the unix-socket bridge
//!   between `hark mcp-operator-ask` (the `hark-mcp` crate) and whoever
//!   serves the operator.
//! - [`store`], [`inbox`], [`inbox_cli`]: the durable inbox, the operator's
//!   side of the socket (reply, list, follow), and `hark inbox/answer/skip`.
//! - [`serve`], [`ask`]: the `hark serve` daemon and `hark ask` command.
//! - [`dispatch`], [`run_cli`], [`relay`]: `hark run`, composing the agent's
//!   command line and its per-call socket; [`dispatcher`]: runs the daemon
//!   starts for the operator (the `dispatch` frame, the app's form).
//! - [`trace`], [`config`], [`text`]: trace events and logging; the config
//!   file; cutting text to a length.

pub mod approval;
pub mod ask;
pub mod bridge;
pub mod client;
pub mod config;
pub mod dispatch;
pub mod dispatcher;
pub mod inbox;
pub mod inbox_cli;
pub mod intake;
pub mod item;
pub mod prompter;
pub mod registry;
pub mod relay;
pub mod resolve;
pub mod run_cli;
pub mod schema;
pub mod script;
pub mod serve;
pub mod socket;
pub mod store;
pub mod terminal;
pub mod text;
pub mod trace;
pub mod validate;
pub mod wire;
