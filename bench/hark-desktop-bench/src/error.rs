//! Why a run could not go on to the end. What it measured wrong (a
//! `modal.shown` never logged, a process left behind) is in the report, not
//! here.

use std::path::PathBuf;

use hark_bench::args::ArgsError;
use hark_harness::{SandboxError, WaitError};

use crate::asker::AskError;
use crate::desktop::StartError;
use crate::procs::ClockTicksError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Args(#[from] ArgsError),
    #[error(
        "{} is missing; build with `cargo build --release -p hark -p hark-app -p hark-window` or pass --bin-dir",
        .0.display()
    )]
    Missing(PathBuf),
    #[error("{0} is not installed: run ./scripts/setup (bench/desktop does)")]
    NotInstalled(&'static str),
    #[error(
        "no X display: run it under xvfb-run -a -s \"-screen 0 1280x800x24\" (bench/desktop does)"
    )]
    NoDisplay,
    #[error(transparent)]
    ClockTicks(#[from] ClockTicksError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Ask(#[from] AskError),
    /// An event the app should have logged, or a `Notify` on the bus, never
    /// came: the wait has the last lines.
    #[error(transparent)]
    Wait(#[from] WaitError),
    #[error("cannot run hark skip")]
    RunSkip(#[source] std::io::Error),
    #[error("hark skip {id} failed: {stderr}")]
    Skip { id: String, stderr: String },
    #[error("the app exited during the idle window; its last lines:\n{tail}")]
    AppExited { tail: String },
    #[error("no asks were made")]
    NoAsks,
}
