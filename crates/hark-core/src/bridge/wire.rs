//! The bridge protocol: newline-delimited JSON frames on a unix socket.
//!
//! One protocol serves both kinds of socket (the app's well-known one and the
//! per-call ones a dispatcher hands to a child as `HARK_ASK_SOCK`):
//!
//! ```text
//! client → {"type":"ask","session_id":…,"asker":{…},"request":{"questions":[…]},"timeout_secs":…}
//! server ← {"type":"accepted","id":…,"timeout_ms":…}
//! server ← {"type":"settled","id":…,"outcome":{"outcome":"answered","answers":{…},"defaulted":[…]}}
//! client → {"type":"cancel"}            (optional; closing the socket does the same)
//! client → {"type":"approve","tool_name":"Edit","input":{…},"session_id":…}
//! server ← {"type":"decided","allow":true,"scope":"turn","by":"grant"}   or accepted, then settled
//! server ← {"type":"error","code":"invalid","message":…,"issues":[…]}
//! ```
//!
//! Operator surfaces use the same socket:
//!
//! ```text
//! client → {"type":"reply","id":…,"reply":{"action":"answer","answers":{…}}}
//! server ← {"type":"replied","id":…,"outcome":{…}}   or an error: not_pending, invalid, human_reply_mismatch
//! client → {"type":"list","filter":{"pending":true,"limit":50,"offset":0}}
//! server ← {"type":"items","items":[…],"next":37}   (clipped entries; `next` when more follow)
//! client → {"type":"get","id":…}
//! server ← {"type":"item","item":{…}}                 (the item whole) or an error: not_found, frame_too_large
//! client → {"type":"list_runs","limit":20,"offset":0}   (list_sessions alike)
//! server ← {"type":"runs","runs":[…],"next":20}
//! client → {"type":"subscribe"}
//! server ← {"type":"event","event":"added","item":{…}}   (the pending items first, then every change)
//! client → {"type":"clear_settled"}
//! server ← {"type":"cleared","removed":N}
//! client → {"type":"dispatch","request":{"prompt":…,"verb":"task","cwd":…,"read_only":false}}
//! server ← {"type":"dispatched","run_id":…,"log":…}
//! client → {"type":"pair_web"}                  (list_devices, revoke_device alike)
//! server ← {"type":"pairing","code":"ABCD-1234","expires_ms":…,"url":"http://127.0.0.1:8787/pair.html#code=…"}
//! client → {"type":"status"}
//! server ← {"type":"status","store":{"path":…,"error":"database or disk is full","unrecorded":1,…}}
//! ```
//!
//! Frames are capped at [`MAX_FRAME`] bytes. A listing is paged by bytes:
//! the server fills a page until the next entry would push it past the
//! cap, and says where the next page starts (`next`, an offset to send
//! back); a client follows pages until there is no `next` or it has what
//! it wants. Each entry is clipped (see `bridge::listed`), so an entry
//! always fits.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::bridge::frame::{FrameError, MAX_FRAME, read_frame, write_frame};
use crate::bridge::options::RunOptions;
use crate::bridge::views::{DeviceView, ItemView, RunView, SessionView};
use crate::model::approval::{DecidedBy, Scope};
use crate::model::ids::{DeviceId, ItemId, RunId, SessionId};
use crate::model::item::ItemFilter;
use crate::model::item::{Asker, Outcome};
use crate::model::resolve::{Answer, Notes, Picks};
use crate::model::run::RunStart;
use crate::model::validate::Issue;
use crate::registry::StoreHealth;

/// A frame from a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Ask the operator. `request` is the raw call, validated by the server.
    Ask {
        #[serde(flatten)]
        caller: Caller,
        request: Value,
    },
    /// The write-mode gate: may the agent make this call? (What Claude
    /// Code sends its `--permission-prompt-tool`.) Answered by `decided`
    /// when the policy or a grant settles it, else like an ask: `accepted`,
    /// then `settled` with an `approved` or `denied` outcome.
    Approve {
        #[serde(flatten)]
        caller: Caller,
        tool_name: String,
        #[serde(default)]
        input: Value,
    },
    /// The asker no longer wants the answer.
    Cancel,
    /// The asker's own dialog for the call was answered where it runs (an
    /// interactive agent's terminal) before the operator here did: the
    /// item is withdrawn, settled as answered there.
    AnsweredAtAgent,
    /// An agent ran a tool call (Claude Code's `PostToolUse` hook, in a
    /// session started in a terminal): a permission dialog for that call
    /// still pending here was answered in the agent's terminal, and is
    /// withdrawn as [`ClientFrame::AnsweredAtAgent`] does (Claude Code does
    /// not end the dialog's hook when the terminal allows). `recorded`.
    RanAtAgent {
        session_id: crate::model::ids::SessionId,
        tool_name: String,
        #[serde(default)]
        input: Value,
    },
    /// The operator's reply to a pending item; `via` names the surface it
    /// came through, of those a socket client may be (the command line when
    /// absent).
    Reply {
        id: ItemId,
        reply: WireReply,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<SocketSurface>,
    },
    /// Lists items, pending and settled, one page of clipped entries
    /// (from `filter.offset`).
    List {
        #[serde(default)]
        filter: ItemFilter,
    },
    /// Fetches one item whole, nothing clipped (answered by `item`).
    Get { id: ItemId },
    /// Waits for the item a tool use asked to settle (a paused run, before
    /// it resumes its agent); the answer is `settled`, at once if it has.
    Await {
        tool_use_id: String,
        /// The session the item was asked in: only its own is found.
        session_id: SessionId,
    },
    /// The agent's host says a sub-agent makes the caller's tool call
    /// (`tool_use_id`; Claude Code's hook, before the call): the item that
    /// call asks is filed under the sub-agent. Answered by `recorded`.
    SubAgent {
        #[serde(flatten)]
        caller: Caller,
        sub_agent: crate::model::item::SubAgent,
    },
    /// Follows the inbox: the pending items, then every add and settle.
    Subscribe,
    /// Deletes the settled history.
    ClearSettled,
    /// `hark run` announces a run it dispatched (answered by `recorded`).
    RunStarted { run: RunStart },
    /// `hark run` reports how the run ended, with the agent's last result
    /// and the run's cost (answered by `recorded`).
    RunFinished {
        run_id: RunId,
        exit_code: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// Starts a run the daemon owns (`hark run --detach`, the app's
    /// dispatch form); answered by `dispatched`.
    Dispatch { request: DispatchRequest },
    /// Lists the runs, newest first.
    ListRuns {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Where the page starts: a page's `next`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u32>,
    },
    /// Lists the sessions that asked, those waiting on the operator first.
    ListSessions {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Where the page starts: a page's `next`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u32>,
    },
    /// How the daemon is doing: whether its store takes writes.
    Status,
    /// Opens (or finds) the socket agents on another host ask through,
    /// forwarded there by `ssh -R`; answered by `host_socket`.
    HostSocket { host: String },
    /// Mints a one-time code that pairs a device with the web surface
    /// (`hark web pair`); answered by `pairing`.
    PairWeb,
    /// Lists the paired web devices; answered by `devices`.
    ListDevices,
    /// Revokes a paired web device: its sessions end at once. Answered by
    /// `revoked`, or `not_found`.
    RevokeDevice { id: DeviceId },
}

/// Who asks, for which run, and how long they wait: the fields an `ask`
/// and an `approve` frame share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Caller {
    /// The agent session the item is filed under ("unnamed" when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The dispatched run the item belongs to (set by the run's socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    #[serde(default)]
    pub asker: Asker,
    /// This call's bounded wait; the server's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
    /// The agent host's id of the tool call (Claude Code's `toolu_…`, from
    /// the hook's input or the call's `_meta`). A call with the id of an
    /// item already asked is that item's: it waits on it, or gets its
    /// outcome at once if it has settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The asker can be paused and resumed (hark's `PreToolUse` hook): at
    /// the end of the wait the item parks, and the answer is `parked`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parks: bool,
    /// The agent's saved session, for a caller that parks (the hook's
    /// `transcript_path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<std::path::PathBuf>,
    /// The agent's own permission dialog shows this call (Claude Code's
    /// `PermissionRequest` hook, in a session someone started in a
    /// terminal): the agent chose to ask, so the operator is asked even
    /// where the write-mode policy would let it pass; a grant still covers
    /// it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dialog: bool,
}

impl ClientFrame {
    /// The caller of an `ask`, `approve` or `sub_agent` frame.
    pub fn caller_mut(&mut self) -> Option<&mut Caller> {
        match self {
            ClientFrame::Ask { caller, .. }
            | ClientFrame::Approve { caller, .. }
            | ClientFrame::SubAgent { caller, .. } => Some(caller),
            _ => None,
        }
    }
}

impl Caller {
    /// The session the item is filed under.
    pub fn session(&self) -> SessionId {
        self.session_id.clone().unwrap_or_else(SessionId::unnamed)
    }
}

/// What the operator did, on the wire.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum WireReply {
    Answer {
        #[serde(default)]
        answers: Picks,
        /// The operator's notes, by question text.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        notes: Notes,
    },
    Skip,
    /// Allow an approval, for a scope (its default scope when absent).
    Approve {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    Deny,
    /// Withdraw the item, and with it the run waiting on it: a parked run
    /// is not resumed (its agent stays stopped); a waiting agent is told
    /// its call was cancelled.
    Cancel,
}

impl From<WireReply> for crate::registry::Reply {
    fn from(reply: WireReply) -> Self {
        use crate::registry::Reply;
        match reply {
            WireReply::Answer { answers, notes } => Reply::Answer(Answer {
                picks: answers,
                notes,
            }),
            WireReply::Skip => Reply::Skip,
            WireReply::Approve { scope } => Reply::Approve(scope),
            WireReply::Deny => Reply::Deny,
            WireReply::Cancel => Reply::Cancel,
        }
    }
}

/// The surfaces a socket client may reply as: never the desktop or a
/// notification, which reply in the app's own process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketSurface {
    Cli,
    Studio,
}

impl From<SocketSurface> for crate::model::item::Surface {
    fn from(via: SocketSurface) -> Self {
        match via {
            SocketSurface::Cli => crate::model::item::Surface::Cli,
            SocketSurface::Studio => crate::model::item::Surface::Studio,
        }
    }
}

/// What happened to an item, for followers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedEvent {
    Added,
    /// It parked: still waiting, its agent paused.
    Parked,
    Settled,
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The item is pending; the operator has `timeout_ms`.
    Accepted { id: ItemId, timeout_ms: u64 },
    /// The item settled.
    Settled { id: ItemId, outcome: Outcome },
    /// Nobody answered within the wait and the asker can be resumed: the
    /// item parked, and waits with no timeout; the asker pauses its agent.
    Parked { id: ItemId },
    /// A proposed call was decided without asking: it is read-only
    /// (`policy`), or an earlier grant covers it (`grant`, with its scope).
    Decided {
        allow: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
        by: DecidedBy,
    },
    /// A reply was taken; the item settled with `outcome`.
    Replied { id: ItemId, outcome: Outcome },
    /// The answer to `list`: a page.
    Items {
        items: Vec<ItemView>,
        /// Where the next page starts, when more follow.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<u32>,
    },
    /// The answer to `get`: the item whole.
    Item { item: Box<ItemView> },
    /// One inbox change, for a subscriber.
    Event {
        event: FeedEvent,
        item: Box<ItemView>,
    },
    /// The answer to `clear_settled`.
    Cleared { removed: usize },
    /// A run's start or end was recorded.
    Recorded,
    /// The answer to `list_runs`: a page.
    Runs {
        runs: Vec<RunView>,
        /// Where the next page starts, when more follow.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<u32>,
    },
    /// The answer to `list_sessions`: a page.
    Sessions {
        sessions: Vec<SessionView>,
        /// Where the next page starts, when more follow.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<u32>,
    },
    /// The answer to `dispatch`: the run started.
    Dispatched(Dispatched),
    /// The answer to `status`: the store's health (`None` without a store).
    Status { store: Option<StoreHealth> },
    /// The answer to `host_socket`: where that host's socket is.
    HostSocket { path: std::path::PathBuf },
    /// The answer to `pair_web`: a one-time code, and the web surface's
    /// address when the daemon serves it.
    Pairing {
        code: String,
        expires_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// The answer to `list_devices`.
    Devices { devices: Vec<DeviceView> },
    /// The answer to `revoke_device`.
    Revoked { id: DeviceId },
    /// The frame was refused; nothing changed.
    Error(WireError),
}

/// One run to start, as a client or the dispatch form sends it: the run's
/// options, as `hark run` takes them, and the environment it gets.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchRequest {
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub options: RunOptions,
    /// The whole environment the run gets (`hark run --detach` sends its
    /// caller's); the daemon's own, less what it set for itself, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub env: Option<Environment>,
}

/// A run's whole environment. It holds the caller's secrets (API keys), so
/// its `Debug` shows how many variables there are, never their values.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Environment(pub BTreeMap<String, String>);

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Environment({} variables)", self.0.len())
    }
}

/// A started run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatched {
    pub run_id: RunId,
    /// Where its output goes.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub log: PathBuf,
}

/// A refused frame, with every validation issue when there are any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<Issue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The ask call failed validation; `issues` lists why.
    Invalid,
    /// The frame exceeded [`MAX_FRAME`], or what was asked for would.
    FrameTooLarge,
    /// The frame was not a known JSON frame.
    BadFrame,
    /// The peer runs as another user.
    Forbidden,
    /// The item is not pending: already settled (exactly one reply wins), or unknown.
    NotPending,
    /// No item has the id `get` named.
    NotFound,
    /// The reply is of the wrong shape for the item (answers to an approval,
    /// a verdict on a question set); the item stays pending.
    HumanReplyMismatch,
    /// The server could not do it (its store failed).
    Unavailable,
    /// An operator frame from an agent waiting on the operator, or from a
    /// process inside one: an agent cannot answer its own questions.
    InsideAgent,
}

impl ErrorCode {
    /// The status an HTTP-ish caller reports.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::Invalid => 400,
            ErrorCode::FrameTooLarge => 413,
            ErrorCode::BadFrame => 400,
            ErrorCode::Forbidden | ErrorCode::InsideAgent => 403,
            ErrorCode::NotPending => 409,
            ErrorCode::NotFound => 404,
            ErrorCode::HumanReplyMismatch => 409,
            ErrorCode::Unavailable => 503,
        }
    }
}

impl From<crate::registry::NotAVerdict> for WireError {
    fn from(e: crate::registry::NotAVerdict) -> Self {
        WireError::new(ErrorCode::Invalid, e.to_string())
    }
}

impl From<crate::registry::ReplyError> for WireError {
    fn from(e: crate::registry::ReplyError) -> Self {
        use crate::registry::ReplyError;
        let message = e.to_string();
        match e {
            ReplyError::NotPending(_) => WireError::new(ErrorCode::NotPending, message),
            // The issues go beside the message, not in it as well: a client
            // that prints both would say each twice.
            ReplyError::Invalid(issues) => WireError {
                code: ErrorCode::Invalid,
                message: "the answers do not fit the questions".into(),
                issues,
            },
            ReplyError::NotOffered { .. } => WireError::new(ErrorCode::Invalid, message),
            ReplyError::HumanReplyMismatch { .. } => {
                WireError::new(ErrorCode::HumanReplyMismatch, message)
            }
            ReplyError::DecidedElsewhere { .. } => WireError::new(ErrorCode::NotPending, message),
            ReplyError::Undecided(_) => WireError::new(ErrorCode::Unavailable, message),
        }
    }
}

impl WireError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> WireError {
        WireError {
            code,
            message: message.into(),
            issues: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Verb;
    use serde_json::json;

    #[test]
    fn the_caller_fields_sit_beside_the_request_on_the_wire() {
        let raw = json!({"type": "approve", "session_id": "s", "run_id": "00000000-0000-0000-0000-000000000001",
            "asker": {"pid": 7}, "tool_name": "Write", "input": {"file_path": "/x"},
            "timeout_secs": 5.0});
        let frame: ClientFrame = serde_json::from_value(raw.clone()).unwrap();
        let ClientFrame::Approve {
            caller, tool_name, ..
        } = &frame
        else {
            panic!("{frame:?}");
        };
        assert_eq!(caller.session(), "s");
        assert_eq!(
            caller.run_id.map(|id| id.to_string()).as_deref(),
            Some("00000000-0000-0000-0000-000000000001")
        );
        assert_eq!(caller.asker.pid, Some(7));
        assert_eq!(caller.timeout_secs, Some(5.0));
        assert_eq!(tool_name, "Write");
        assert_eq!(serde_json::to_value(&frame).unwrap(), raw);

        // Every caller field may be left out.
        let bare: ClientFrame =
            serde_json::from_value(json!({"type": "ask", "request": {"questions": []}})).unwrap();
        let ClientFrame::Ask { caller, .. } = bare else {
            panic!("{bare:?}");
        };
        assert_eq!(caller.session(), "unnamed");
        assert_eq!(caller.timeout_secs, None);
    }

    #[test]
    fn a_dispatch_carries_every_run_option() {
        let request = DispatchRequest {
            options: crate::bridge::options::tests::every_option(),
            env: Some(Environment([("PATH".to_owned(), "/bin".to_owned())].into())),
        };
        let frame = ClientFrame::Dispatch { request };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(serde_json::from_str::<ClientFrame>(&text).unwrap(), frame);

        // The desktop's dispatch form sends the options beside the prompt.
        let sent: ClientFrame = serde_json::from_value(json!({"type": "dispatch", "request": {
            "prompt": "fix it", "verb": "converse", "read_only": true, "cwd": "/w",
            "agent_kind": "gemini", "no_confine": true, "intake": {"questions": []}}}))
        .unwrap();
        let ClientFrame::Dispatch { request } = sent else {
            panic!("{sent:?}");
        };
        assert_eq!(request.options.words, ["fix it"]);
        assert_eq!(request.options.verb, Verb::Converse);
        assert!(request.options.read_only && request.options.no_confine);
        assert_eq!(
            request.options.agent_kind,
            Some(crate::agent::AgentKind::Gemini)
        );
        assert!(request.env.is_none());
    }
}
