//! What hark's end-to-end tests (`tests/it`) and benchmarks (`bench/`)
//! share: every child they start runs in a [`Sandbox`], whatever they wait
//! for they wait for on a child's output ([`Lines`]), and the desktop app
//! runs on a private [`Session`].
//!
//! # Layout
//!
//! - `sandbox`: the temp dir with hark's socket, config and store, and the
//!   environment every child gets (none of the user's session).
//! - `lines`: a child's output followed line by line, stamped; waits wake
//!   on each new line. `clock` reads the times in it.
//! - `process`: stopping children (SIGTERM, then SIGKILL), waiting for exits.
//! - `daemon`: `hark serve` with a scripted operator, in a sandbox.
//! - `desktop`: the private session bus, its `dbus-monitor`, dunst, and a
//!   tray host; `monitor` reads what the monitor prints.
//! - `sshd`: a real OpenSSH server on 127.0.0.1, for agents on a host
//!   reached over SSH.
//! - `nats`: a real nats-server (or a cluster of them) on 127.0.0.1 with
//!   JetStream and nkey users, killed and restarted, for the team hub.
//! - `browser`: headless Chromium as a phone (390×844, touch) under
//!   chromedriver, driven through WebDriver; taps, axe-core, screenshots.
//! - `report`: an error with its causes, as a benchmark or a test prints it.
//! - `skip`: a test that cannot run here says SKIPPED, or fails in CI and
//!   under the test command.
//!
//! Each module that can fail has its own error enum (`SandboxError`,
//! `WaitError`, `ProcessError`, `DaemonError`, `DesktopError`,
//! `BrowserError`, `NatsError`, `SshdError`), whose messages leave their
//! cause to `source()`: print one with [`Report`].

pub mod browser;
pub mod clock;
pub mod daemon;
pub mod desktop;
pub mod lines;
pub mod monitor;
pub mod nats;
pub mod process;
pub mod report;
pub mod sandbox;
pub mod skip;
pub mod sshd;

pub use browser::{Browser, BrowserError};
pub use daemon::{Daemon, DaemonError};
pub use desktop::{DesktopError, Session, TrayHost};
pub use lines::{Event, Line, Lines, PATIENCE, WaitError};
pub use nats::{NatsCluster, NatsError, NatsOptions, NatsServer, NatsUser, Permissions, Rule};
pub use process::ProcessError;
pub use report::Report;
pub use sandbox::{Sandbox, SandboxError, scratch};
pub use skip::skip;
