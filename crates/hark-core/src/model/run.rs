//! A dispatched run, as the model knows it: how it announces itself, and
//! how it stands.

use serde::{Deserialize, Serialize};

use crate::model::ids::{RunId, SessionId};

/// A dispatched run's state, as the inbox shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Running, with an item waiting on the operator.
    Waiting,
    /// Its agent is paused on a question that parked; the answer resumes it.
    Parked,
    /// The agent exited 0.
    Finished,
    /// The agent exited otherwise, or its `hark run` vanished.
    Failed,
}

/// A run as `hark run` announces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    pub id: RunId,
    pub session_id: SessionId,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The `hark run` process: a run whose process is gone is failed.
    pub pid: u32,
    /// Where its agent runs (none from a `hark run` older than confinement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<Confinement>,
}

/// How a run's agent is confined, as its record and every surface show it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Confinement {
    /// hark's socket, store, config and secret files do not exist for the agent; `by`
    /// names the mechanism (`bubblewrap`, `seatbelt`, `job object`).
    Confined { by: String },
    /// Confinement was wanted but this machine cannot give it.
    Unavailable { reason: String },
    /// The operator turned it off (`--no-confine`, `[confine] enabled =
    /// false`).
    Off,
}

impl Confinement {
    pub fn is_confined(&self) -> bool {
        matches!(self, Confinement::Confined { .. })
    }

    /// One line for people: `confined (bubblewrap)`, `not confined: …`.
    pub fn label(&self) -> String {
        match self {
            Confinement::Confined { by } => format!("confined ({by})"),
            Confinement::Unavailable { reason } => format!("not confined: {reason}"),
            Confinement::Off => "not confined (turned off)".to_owned(),
        }
    }
}
