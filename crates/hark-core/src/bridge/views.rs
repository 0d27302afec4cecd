//! What the socket and the desktop's IPC carry of the store's rows: the
//! item, run and session as an operator surface shows them. Store rows never
//! cross as they are; they are converted here (GitButler's way), so the
//! store can change its rows without changing what clients read.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::model::approval::Approval;
use crate::model::attribution::Attribution;
use crate::model::ids::{DeviceId, ItemId, RunId, SessionId};
use crate::model::item::{Asker, Item, Outcome, Remote, Surface};
use crate::model::run::RunStatus;
use crate::model::schema::AskRequest;
use crate::registry::StoreHealth;
use crate::store::{DeviceRecord, Record, RunRecord, SessionRecord, unix_ms};

/// One item, pending or settled.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemView {
    pub id: ItemId,
    /// `question_set` or `approval`.
    pub kind: String,
    pub session_id: SessionId,
    /// The dispatched run that asked, if any.
    #[serde(default)]
    pub run_id: Option<RunId>,
    pub asker: Asker,
    pub request: AskRequest,
    /// What a write-mode approval asks to allow (`kind` is then `approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    pub created_ms: u64,
    pub deadline_ms: u64,
    /// `None` while pending.
    pub outcome: Option<Outcome>,
    /// Which surface replied (`script`, `terminal`, `cli`, `desktop`,
    /// `notification`, `studio`, `web`), when one did.
    pub replied_by: Option<String>,
    /// The paired device that replied, when `replied_by` is `web`.
    #[serde(default)]
    pub replied_device: Option<DeviceRef>,
    /// The team's operator whose reply won, when `replied_by` is `hub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub replied_remote: Option<Remote>,
    pub settled_ms: Option<u64>,
    /// The operator dismissed it from the desktop inbox (it stays in the history).
    #[serde(default)]
    pub dismissed: bool,
    /// Waiting, parked (its agent paused until it settles), or settled.
    #[serde(default)]
    pub state: ItemState,
    /// When it parked (unix ms), if it has.
    #[serde(default)]
    pub parked_ms: Option<u64>,
    /// Who asked, compactly (the agent, the project, the session, the run).
    pub attribution: Attribution,
    /// Some of its text was clipped for a listing (each cut is marked
    /// `…[clipped, SIZE]`); `get` fetches it whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub clipped: bool,
}

/// A paired device, as an item that it answered names it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRef {
    pub id: DeviceId,
    /// Its name (`None` when the store no longer has the device).
    pub name: Option<String>,
}

/// A paired device, as `hark web devices` and the web's device list show it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceView {
    pub id: DeviceId,
    pub name: String,
    pub paired_ms: u64,
    pub last_seen_ms: Option<u64>,
    /// It is the device asking (the web's list; always false on the socket).
    #[serde(default)]
    pub current: bool,
}

impl From<DeviceRecord> for DeviceView {
    fn from(r: DeviceRecord) -> DeviceView {
        DeviceView {
            id: r.id,
            name: r.name,
            paired_ms: r.paired_ms,
            last_seen_ms: r.last_seen_ms,
            current: false,
        }
    }
}

/// What a page shows: one modal for every pending item, or the inbox.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// One modal for every pending item, in turn.
    Modal,
    /// Pending items, then the history, the runs and the dispatch form.
    Inbox,
}

/// Everything a window (the app's, or a browser's) draws from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct InboxView {
    /// Waiting items, oldest first.
    pub pending: Vec<ItemView>,
    /// Settled items not dismissed, newest first (empty when asked for pending only).
    pub history: Vec<ItemView>,
    /// The latest dispatched runs, newest first (empty when asked for pending only).
    pub runs: Vec<RunView>,
    /// The sessions that asked, waiting ones first (empty when asked for pending only).
    pub sessions: Vec<SessionView>,
    /// The item the modal should show first.
    pub focus: Option<ItemId>,
    /// What the window shows (`None` while it is hidden; always `None` on the web).
    pub view: Option<View>,
    /// The app is silenced (always false on the web).
    pub do_not_disturb: bool,
    /// The tray's Quit waits for the operator's word (the inbox asks;
    /// always false on the web).
    pub quit_asked: bool,
    /// The store's health while it refuses writes (the items it lacks are
    /// held in memory, and lost if the daemon stops first); `None` while it
    /// takes them.
    pub store: Option<StoreHealth>,
    /// The daemon's clock, so time left is counted from the same now.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub now_ms: u64,
}

/// Where an item stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    /// Waiting on the operator, its agent waiting too.
    #[default]
    Pending,
    /// Waiting on the operator with no timeout; its agent is paused and is
    /// resumed when it settles.
    Parked,
    Settled,
}

impl ItemState {
    fn of(outcome: Option<&Outcome>, parked_ms: Option<u64>) -> ItemState {
        match (outcome, parked_ms) {
            (Some(_), _) => ItemState::Settled,
            (None, Some(_)) => ItemState::Parked,
            (None, None) => ItemState::Pending,
        }
    }
}

impl ItemView {
    /// How it settled and who replied, as a person reads it: `answered by
    /// desktop`, `answered on phone (Pixel 8)` (a paired browser, by its
    /// name), `allowed on phone (from its notification)` (a push's button),
    /// `skipped by alice on devbox` (the team's hub). `None` when nobody
    /// replied (it timed out, or nobody was there).
    pub fn replied_by_label(&self) -> Option<String> {
        let by = self.replied_by.as_ref()?;
        let how = match &self.outcome {
            Some(Outcome::Approved { .. }) => "allowed",
            Some(outcome) => outcome.name(),
            None => "replied",
        };
        let who = if let Some(remote) = &self.replied_remote {
            format!("by {remote}")
        } else {
            match (by.as_str(), &self.replied_device) {
                (
                    _,
                    Some(DeviceRef {
                        name: Some(name), ..
                    }),
                ) => format!("on phone ({name})"),
                (_, Some(DeviceRef { id, name: None })) => format!("on phone (device {id})"),
                ("push", None) => "on phone (from its notification)".to_owned(),
                (by, None) => format!("by {by}"),
            }
        };
        Some(format!("{how} {who}"))
    }

    /// A pending item, as the registry holds it.
    pub fn pending(item: &Item) -> ItemView {
        ItemView::from(Record::from(item))
    }

    /// An item that just settled, `at` the registry's time.
    pub fn settled(
        item: &Item,
        outcome: Outcome,
        replied_by: Option<Surface>,
        at: SystemTime,
    ) -> ItemView {
        ItemView {
            outcome: Some(outcome),
            replied_by: replied_by.as_ref().map(|s| s.name().to_owned()),
            // Named from the store by `operator::settled`.
            replied_device: replied_by
                .as_ref()
                .and_then(Surface::device)
                .map(|id| DeviceRef { id, name: None }),
            replied_remote: replied_by.as_ref().and_then(Surface::remote).cloned(),
            settled_ms: Some(unix_ms(at)),
            state: ItemState::Settled,
            ..ItemView::pending(item)
        }
    }
}

impl From<Record> for ItemView {
    fn from(r: Record) -> ItemView {
        let parked_ms = r.parking.as_ref().and_then(|p| p.parked_at).map(unix_ms);
        let state = ItemState::of(r.outcome.as_ref(), parked_ms);
        let attribution = Attribution::of(&r.asker, &r.session_id, r.run_id.as_ref());
        ItemView {
            id: r.id,
            kind: r.kind,
            session_id: r.session_id,
            run_id: r.run_id,
            asker: r.asker,
            request: r.request,
            approval: r.approval,
            created_ms: r.created_ms,
            deadline_ms: r.deadline_ms,
            outcome: r.outcome,
            replied_by: r.replied_by,
            replied_device: r.replied_device.map(|(id, name)| DeviceRef { id, name }),
            replied_remote: r.replied_remote,
            settled_ms: r.settled_ms,
            dismissed: r.dismissed,
            state,
            parked_ms,
            attribution,
            clipped: false,
        }
    }
}

/// One dispatched run (`hark run`), with the items it asked.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub id: RunId,
    pub session_id: SessionId,
    /// The agent command line.
    pub command: String,
    pub cwd: Option<String>,
    pub status: RunStatus,
    pub created_ms: u64,
    pub finished_ms: Option<u64>,
    pub exit_code: Option<i32>,
    /// Items it asked, and how many of them are still pending.
    pub items: u32,
    pub pending: u32,
    /// The agent's last result text (its start, for a long one).
    pub result: Option<String>,
    /// What the run cost, as the agent reported it.
    pub cost_usd: Option<f64>,
    /// Where its agent ran: confined, or not and why.
    #[serde(default)]
    pub confinement: Option<crate::model::run::Confinement>,
    /// Some of its text was clipped for a listing (each cut is marked
    /// `…[clipped, SIZE]`); the store keeps it whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub clipped: bool,
}

impl From<RunRecord> for RunView {
    fn from(r: RunRecord) -> RunView {
        RunView {
            id: r.id,
            session_id: r.session_id,
            command: r.command,
            cwd: r.cwd,
            status: r.status,
            created_ms: r.created_ms,
            finished_ms: r.finished_ms,
            exit_code: r.exit_code,
            items: r.items,
            pending: r.pending,
            result: r.result,
            cost_usd: r.cost_usd,
            confinement: r.confinement,
            clipped: false,
        }
    }
}

/// An agent session: who asks under it, and how it stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    pub session_id: SessionId,
    /// Who asked last under it.
    pub asker: Asker,
    /// Whether that agent's process is still there (`None` when unknown).
    pub alive: Option<bool>,
    /// Items it asked (those still kept), and how many wait on the operator.
    pub items: u32,
    pub pending: u32,
    pub last_asked_ms: u64,
    /// How its latest settled item ended (`answered`, `timed_out`, …).
    pub last_outcome: Option<String>,
    /// Some of its text was clipped for a listing (each cut is marked
    /// `…[clipped, SIZE]`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub clipped: bool,
}

impl From<SessionRecord> for SessionView {
    fn from(r: SessionRecord) -> SessionView {
        SessionView {
            session_id: r.session_id,
            asker: r.asker,
            alive: r.alive,
            items: r.items,
            pending: r.pending,
            last_asked_ms: r.last_asked_ms,
            last_outcome: r.last_outcome,
            clipped: false,
        }
    }
}

/// Converts a listing of store rows.
pub fn views<R, V: From<R>>(rows: Vec<R>) -> Vec<V> {
    rows.into_iter().map(V::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::approval::Scope;
    use crate::model::ids::Ids;

    fn settled(outcome: Outcome, by: &str, device: Option<Option<&str>>) -> ItemView {
        let mut view = ItemView::pending(&crate::model::item::Item {
            id: Ids::random().item(),
            session_id: SessionId::unnamed(),
            run_id: None,
            asker: Asker::default(),
            request: AskRequest { questions: vec![] },
            approval: None,
            created_at: SystemTime::now(),
            timeout: std::time::Duration::from_secs(60),
            parking: None,
            mirrored: false,
        });
        view.outcome = Some(outcome);
        view.replied_by = Some(by.to_owned());
        view.replied_device = device.map(|name| DeviceRef {
            id: DeviceId(uuid::Uuid::from_u128(9)),
            name: name.map(str::to_owned),
        });
        view
    }

    #[test]
    fn a_reply_from_the_phone_reads_answered_on_phone_with_its_name() {
        let skipped = Outcome::Skipped {
            unconfirmed_defaults: Default::default(),
        };
        let label = |view: ItemView| view.replied_by_label().unwrap();
        assert_eq!(
            label(settled(skipped.clone(), "web", Some(Some("Pixel 8")))),
            "skipped on phone (Pixel 8)"
        );
        assert_eq!(
            label(settled(Outcome::Denied, "web", Some(None))),
            format!("denied on phone (device {})", uuid::Uuid::from_u128(9))
        );
        let allowed = Outcome::Approved {
            scope: Scope::Action,
        };
        assert_eq!(
            label(settled(allowed, "push", None)),
            "allowed on phone (from its notification)"
        );
        assert_eq!(
            label(settled(skipped.clone(), "desktop", None)),
            "skipped by desktop"
        );
        let mut hub = settled(skipped, "hub", None);
        hub.replied_remote = Some(Remote {
            operator: "alice".to_owned(),
            host: "devbox".to_owned(),
            surface: None,
        });
        assert_eq!(label(hub), "skipped by alice on devbox");
        let mut timed_out = settled(Outcome::TimedOut { after_ms: 1 }, "web", None);
        timed_out.replied_by = None;
        assert_eq!(timed_out.replied_by_label(), None);
    }
}
