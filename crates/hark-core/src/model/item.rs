//! A pending item (one ask call waiting on the operator) and the outcome it
//! settles into (SPEC §4).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::model::approval::{Approval, Scope};
use crate::model::ids::{DeviceId, ItemId, RunId, SessionId};
use crate::model::resolve::Resolution;
use crate::model::schema::{Answers, AskRequest};

/// Who asked: shown to the operator so they know which agent wants them.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asker {
    /// The agent's process id (the MCP server's parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The agent's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The agent's command line, where the platform tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The MCP client's name and version, from its `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Set when a sub-agent of the agent asked (its host's hook said so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_agent: Option<SubAgent>,
    /// The agent runs confined by `hark run`: the daemon sets it (a run
    /// that reported itself confined, asking from its own process), never
    /// the client.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub confined: bool,
    /// The host it asked from, when that is not this machine: the daemon
    /// sets it from the host's socket the call came in on, never the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub host: Option<String>,
}

/// How the items a permission dialog of a session started in a terminal
/// filed (Claude Code's `PermissionRequest` hook) name their client.
pub const INTERACTIVE: &str = "claude (interactive)";

/// A sub-agent, as its host names it (Claude Code's `agent_id` and
/// `agent_type` in a hook's input).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgent {
    pub id: String,
    /// Its type (`general-purpose`, `Explore`, a custom agent's name).
    pub kind: String,
}

impl SubAgent {
    /// How every surface names it: `sub-agent general-purpose of run
    /// 1a2b3c4d` (or `of session NAME` outside a run).
    pub fn label(&self, run_id: Option<&RunId>, session: &SessionId) -> String {
        match run_id {
            Some(run) => format!("sub-agent {} of run {}", self.kind, run.short()),
            None => format!("sub-agent {} of session {session}", self.kind),
        }
    }
}

impl Asker {
    /// This process, as `command` (`hark ask`, `hark run (intake)`).
    pub fn this_process(command: &str) -> Asker {
        Asker {
            pid: Some(std::process::id()),
            cwd: std::env::current_dir()
                .ok()
                .map(|p| p.display().to_string()),
            command: Some(command.to_owned()),
            client: None,
            sub_agent: None,
            confined: false,
            host: None,
        }
    }
}

/// Which items to list.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ItemFilter {
    /// Only pending (`Some(true)`) or only settled (`Some(false)`) items.
    pub pending: Option<bool>,
    /// Only items with this outcome name (`answered`, `timed_out`, …).
    pub outcome: Option<String>,
    pub session_id: Option<SessionId>,
    /// One item by id.
    pub id: Option<ItemId>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

/// One ask call waiting on the operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: ItemId,
    /// The agent session that asked (`HARK_SESSION_ID`, or one per MCP server).
    pub session_id: SessionId,
    /// The dispatched run that asked, if a dispatcher started the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    pub asker: Asker,
    pub request: AskRequest,
    /// Set when the item is a write-mode approval rather than a question
    /// set: `request` is then its one generated question, and it takes a
    /// verdict (approve or deny), never answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// When it was asked (wall clock, for display and the store).
    pub created_at: SystemTime,
    /// How long the operator has before it times out (or, for an item
    /// that parks, before it parks).
    pub timeout: Duration,
    /// Set when the agent that asked can be paused and resumed (a run hark
    /// dispatched asks through its `PreToolUse` hook): at the end of its
    /// bounded wait the item then parks instead of timing out, and waits
    /// with no timeout for the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parking: Option<Parking>,
    /// Filed from the team's hub: another host asked, and that host's clock
    /// times it out. No agent waits on it here; it settles when the hub
    /// says which reply won.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mirrored: bool,
}

/// How an item that parks is found again, and whether it has parked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parking {
    /// The agent host's id of the tool call that asked (Claude Code's
    /// `toolu_…`): the resumed agent calls again with the same id, which the
    /// host sets and the model cannot write.
    pub tool_use_id: String,
    /// When it parked: its agent has been paused since. `None` while its
    /// bounded wait runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_at: Option<SystemTime>,
    /// The agent's saved session (Claude Code's `transcript_path`): when it
    /// is gone, the run can no longer be resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<PathBuf>,
}

impl Item {
    /// `approval` or `question_set`, as the store and the inbox name it.
    pub fn kind(&self) -> &'static str {
        if self.approval.is_some() {
            "approval"
        } else {
            "question_set"
        }
    }

    pub fn deadline(&self) -> SystemTime {
        self.created_at + self.timeout
    }

    /// When it parked, if it has: its agent is paused until it settles.
    pub fn parked_at(&self) -> Option<SystemTime> {
        self.parking.as_ref().and_then(|p| p.parked_at)
    }
}

/// How an item ended. Exactly one per item.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The operator submitted answers (defaults filled in by the core).
    Answered(Resolution),
    /// The operator chose Skip; the defaults were not confirmed.
    Skipped { unconfirmed_defaults: Answers },
    /// Nobody answered within the bounded wait. Defaults are never applied.
    TimedOut { after_ms: u64 },
    /// The agent went away, or hark is shutting down.
    Cancelled { reason: String },
    /// No operator surface is attached.
    NoOperator,
    /// An approval was granted, for this scope.
    Approved { scope: Scope },
    /// An approval was refused: the agent stays read-only.
    Denied,
}

/// Who replied to an item, for the record. The daemon sets it from where
/// the reply came in (a socket client is always `Cli`), so no client can
/// claim to be the desktop.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The desktop app's window.
    Desktop,
    /// A button on the desktop notification.
    Notification,
    /// `hark serve --prompter terminal`.
    Terminal,
    /// `hark serve --prompter script:…`.
    Script,
    /// `hark answer`, `hark skip`, `hark approve`, `hark deny`: any client
    /// of the socket.
    Cli,
    /// `hark mcp-studio`: the operator's own agent's client, answering an
    /// elicitation or calling `answer`.
    Studio,
    /// The web surface (`hark serve --web`), from a paired device; its name
    /// is the store's (see [`crate::pairing`]).
    Web { device: DeviceId },
    /// A button of the phone push (ntfy), its one-time token the credential.
    Push,
    /// Another operator of the team, through the hub: the hub decided their
    /// reply won (see `hark-hub`).
    Hub(Remote),
}

/// An operator of the team as the hub names them: who, on which host, and
/// through which of their surfaces.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    pub operator: String,
    pub host: String,
    /// The surface they replied from (`desktop`, `web`, …), as they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub surface: Option<String>,
}

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {}", self.operator, self.host)
    }
}

impl Surface {
    /// Its name, as the store records it.
    pub fn name(&self) -> &'static str {
        match self {
            Surface::Desktop => "desktop",
            Surface::Notification => "notification",
            Surface::Terminal => "terminal",
            Surface::Script => "script",
            Surface::Cli => "cli",
            Surface::Studio => "studio",
            Surface::Web { .. } => "web",
            Surface::Push => "push",
            Surface::Hub(_) => "hub",
        }
    }

    /// The paired device that replied, for the web surface.
    pub fn device(&self) -> Option<DeviceId> {
        match self {
            Surface::Web { device } => Some(*device),
            _ => None,
        }
    }

    /// The team's operator that replied, through the hub.
    pub fn remote(&self) -> Option<&Remote> {
        match self {
            Surface::Hub(remote) => Some(remote),
            _ => None,
        }
    }
}

/// The text every unanswered tool error starts with.
pub const NOT_ANSWERED: &str = "operator did not answer; proceed without this input";

impl Outcome {
    /// The name used in trace events and the store.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Answered(_) => "answered",
            Outcome::Skipped { .. } => "skipped",
            Outcome::TimedOut { .. } => "timed_out",
            Outcome::Cancelled { .. } => "cancelled",
            Outcome::NoOperator => "no_operator",
            Outcome::Approved { .. } => "approved",
            Outcome::Denied => "denied",
        }
    }

    /// The message an agent reads when the operator did not answer, or `None`
    /// for an answered item.
    pub fn unanswered_message(&self) -> Option<String> {
        let reason = match self {
            Outcome::Answered(_) | Outcome::Approved { .. } => return None,
            Outcome::Denied => "the operator denied it".to_owned(),
            Outcome::Skipped {
                unconfirmed_defaults,
            } => {
                let mut reason = String::from(
                    "the operator skipped this question; proceed on your own judgement",
                );
                if !unconfirmed_defaults.is_empty() {
                    let named = serde_json::to_string(unconfirmed_defaults).unwrap_or_default();
                    reason.push_str(&format!(
                        "; the pre-picked defaults were NOT confirmed: {named}"
                    ));
                }
                reason
            }
            Outcome::TimedOut { after_ms } => format!(
                "timed out after {} s; no default was applied",
                (*after_ms as f64 / 100.0).round() / 10.0
            ),
            Outcome::Cancelled { reason } => format!("cancelled: {reason}"),
            Outcome::NoOperator => {
                "no operator is attached (hark is not running); decide on your own judgement"
                    .to_owned()
            }
        };
        Some(format!("{NOT_ANSWERED} ({reason})"))
    }
}
