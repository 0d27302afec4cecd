//! The items: every question set and approval, pending or settled.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};

use super::{RESTARTED, Store, StoreError, sql_count, to_json, unix_ms};
use crate::model::approval::Approval;
use crate::model::ids::{DeviceId, ItemId, RunId, SessionId};
use crate::model::item::{Asker, Item, ItemFilter, Outcome, Parking, Remote, Surface};
use crate::model::schema::AskRequest;

/// One stored item, pending or settled.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: ItemId,
    pub kind: String,
    pub session_id: SessionId,
    /// The dispatched run that asked, if any.
    pub run_id: Option<RunId>,
    pub asker: Asker,
    pub request: AskRequest,
    /// What a write-mode approval asks to allow (`kind` is then `approval`).
    pub approval: Option<Approval>,
    pub created_ms: u64,
    pub deadline_ms: u64,
    /// `None` while pending.
    pub outcome: Option<Outcome>,
    /// Which surface replied (`script`, `terminal`, `cli`, `desktop`), when one did.
    pub replied_by: Option<String>,
    /// The paired device that replied on the web, and its name (`None`
    /// when the store no longer has it).
    pub replied_device: Option<(DeviceId, Option<String>)>,
    /// The team's operator whose reply won on the hub.
    pub replied_remote: Option<Remote>,
    pub settled_ms: Option<u64>,
    /// The operator dismissed it from the desktop inbox (it stays in the history).
    pub dismissed: bool,
    /// How an item that parks is found again, and when it parked.
    pub parking: Option<Parking>,
    /// Filed from the team's hub (another host asked).
    pub mirrored: bool,
}

impl From<&Item> for Record {
    /// A pending item, as the store holds it.
    fn from(item: &Item) -> Record {
        Record {
            id: item.id,
            kind: item.kind().into(),
            session_id: item.session_id.clone(),
            run_id: item.run_id,
            asker: item.asker.clone(),
            request: item.request.clone(),
            approval: item.approval.clone(),
            created_ms: unix_ms(item.created_at),
            deadline_ms: unix_ms(item.deadline()),
            outcome: None,
            replied_by: None,
            replied_device: None,
            replied_remote: None,
            settled_ms: None,
            dismissed: false,
            parking: item.parking.clone(),
            mirrored: item.mirrored,
        }
    }
}

impl Record {
    /// The item as it was asked (a parked one, restored after a restart).
    pub fn into_item(self) -> Item {
        Item {
            id: self.id,
            session_id: self.session_id,
            run_id: self.run_id,
            asker: self.asker,
            request: self.request,
            approval: self.approval,
            created_at: UNIX_EPOCH + Duration::from_millis(self.created_ms),
            timeout: Duration::from_millis(self.deadline_ms.saturating_sub(self.created_ms)),
            parking: self.parking,
            mirrored: self.mirrored,
        }
    }
}

impl Store {
    pub(super) fn close_out_pending(&self) -> Result<usize, StoreError> {
        let detail = serde_json::to_string(&Outcome::Cancelled {
            reason: RESTARTED.into(),
        })?;
        self.execute(
            "UPDATE items SET outcome = 'cancelled', detail = ?1, settled_ms = ?2
                 WHERE outcome IS NULL AND parked_ms IS NULL AND mirrored = 0",
            params![detail, self.now_ms()],
        )
    }

    /// Records a newly pending item. An item recorded already (one the hub
    /// files again after a restart) is left as it is.
    pub fn insert(&self, item: &Item) -> Result<(), StoreError> {
        self.writes(|w| w.insert(item))
    }

    /// Records an item's outcome, settled now. Only a pending row is
    /// updated, so a settled outcome is never overwritten.
    pub fn settle(
        &self,
        id: ItemId,
        outcome: &Outcome,
        replied_by: Option<&Surface>,
    ) -> Result<bool, StoreError> {
        self.settle_at(id, outcome, replied_by, self.clock.now())
    }

    /// [`Store::settle`], stamped `at` (an outcome recorded later than it
    /// happened keeps its time).
    pub fn settle_at(
        &self,
        id: ItemId,
        outcome: &Outcome,
        replied_by: Option<&Surface>,
        at: SystemTime,
    ) -> Result<bool, StoreError> {
        self.writes(|w| w.settle_at(id, outcome, replied_by, at))
    }

    /// Records that a pending item parked `at`.
    pub fn park(&self, id: ItemId, at: SystemTime) -> Result<bool, StoreError> {
        self.writes(|w| w.park(id, at))
    }

    /// Makes `f`'s item writes in one transaction: all of them are
    /// recorded, or none when one fails. A burst of items costs the store's
    /// log one write of each page they touch instead of one a statement.
    pub fn together<T>(
        &self,
        f: impl FnOnce(&Writes<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.sql(e))?;
        let done = f(&Writes {
            store: self,
            conn: &tx,
        })?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(done)
    }

    /// `f`'s item writes, each a statement of its own.
    fn writes<T>(&self, f: impl FnOnce(&Writes<'_>) -> T) -> T {
        let conn = self.lock();
        f(&Writes {
            store: self,
            conn: &conn,
        })
    }

    /// The parked items, still waiting for the operator, oldest first.
    pub fn parked(&self) -> Result<Vec<Record>, StoreError> {
        self.select(
            "WHERE outcome IS NULL AND parked_ms IS NOT NULL ORDER BY created_ms",
            &[],
        )
    }

    /// The item a tool call with `tool_use_id` asked in `session`, if one did.
    pub fn by_tool_use(
        &self,
        tool_use_id: &str,
        session: &SessionId,
    ) -> Result<Option<Record>, StoreError> {
        Ok(self
            .select(
                "WHERE tool_use_id = ?1 AND session_id = ?2 ORDER BY created_ms DESC LIMIT 1",
                &[tool_use_id, session.as_str()],
            )?
            .pop())
    }

    fn select(&self, clause: &str, args: &[&str]) -> Result<Vec<Record>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(&format!("{SELECT} {clause}"))
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(args.iter()), raw_row)
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        rows.into_iter().map(RawRow::into_record).collect()
    }

    /// Deletes settled items, keeping the newest `keep`; returns how many went.
    pub fn prune_settled(&self, keep: u64) -> Result<usize, StoreError> {
        self.execute(
                "DELETE FROM items WHERE outcome IS NOT NULL AND id NOT IN
                   (SELECT id FROM items WHERE outcome IS NOT NULL ORDER BY settled_ms DESC LIMIT ?1)",
                [sql_count(keep)],
            )
    }

    /// Hides a settled item from the desktop inbox. Pending items cannot be
    /// dismissed: they are answered, skipped or left to time out.
    pub fn dismiss(&self, id: ItemId) -> Result<bool, StoreError> {
        self.execute(
            "UPDATE items SET dismissed = 1 WHERE id = ?1 AND outcome IS NOT NULL",
            [id.to_string()],
        )
        .map(|n| n == 1)
    }

    pub fn get(&self, id: ItemId) -> Result<Option<Record>, StoreError> {
        let conn = self.lock();
        let row = conn
            .prepare_cached(&format!("{SELECT} WHERE id = ?1"))
            .and_then(|mut statement| statement.query_row([id.to_string()], raw_row).optional())
            .map_err(|e| self.sql(e))?;
        row.map(RawRow::into_record).transpose()
    }

    /// Lists records, newest first (pending ones before settled ones).
    pub fn list(&self, filter: &ItemFilter) -> Result<Vec<Record>, StoreError> {
        self.list_as(filter, |record| record)
    }

    /// Lists records as [`Store::list`] does, each converted by `into` as it
    /// is read (a listing of thousands is not held twice).
    pub fn list_as<T>(
        &self,
        filter: &ItemFilter,
        mut into: impl FnMut(Record) -> T,
    ) -> Result<Vec<T>, StoreError> {
        let mut clauses = Vec::new();
        let mut args: Vec<String> = Vec::new();
        match filter.pending {
            Some(true) => clauses.push("outcome IS NULL".to_owned()),
            Some(false) => clauses.push("outcome IS NOT NULL".to_owned()),
            None => {}
        }
        if let Some(outcome) = &filter.outcome {
            args.push(outcome.clone());
            clauses.push(format!("outcome = ?{}", args.len()));
        }
        if let Some(session) = &filter.session_id {
            args.push(session.to_string());
            clauses.push(format!("session_id = ?{}", args.len()));
        }
        if let Some(id) = filter.id {
            args.push(id.to_string());
            clauses.push(format!("id = ?{}", args.len()));
        }
        let mut sql = SELECT.to_owned();
        if !clauses.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&clauses.join(" AND "));
        }
        sql.push_str(&format!(
            " ORDER BY outcome IS NOT NULL, created_ms DESC LIMIT {} OFFSET {}",
            filter.limit.unwrap_or(u32::MAX),
            filter.offset.unwrap_or(0)
        ));
        let conn = self.lock();
        let mut statement = conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(args.iter()), raw_row)
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        rows.into_iter()
            .map(|row| row.into_record().map(&mut into))
            .collect()
    }
}

const SELECT: &str = "SELECT id, kind, session_id, run_id, asker, request, created_ms, deadline_ms, detail, replied_by, settled_ms, dismissed, approval, tool_use_id, parked_ms, transcript, replied_device, (SELECT name FROM devices WHERE devices.id = items.replied_device), mirrored, replied_remote FROM items";

/// A row as SQLite returns it, before its JSON columns are read.
struct RawRow {
    id: String,
    kind: String,
    session_id: SessionId,
    run_id: Option<RunId>,
    asker: String,
    request: String,
    created_ms: i64,
    deadline_ms: i64,
    detail: Option<String>,
    replied_by: Option<String>,
    settled_ms: Option<i64>,
    dismissed: bool,
    approval: Option<String>,
    tool_use_id: Option<String>,
    parked_ms: Option<i64>,
    transcript: Option<String>,
    replied_device: Option<String>,
    replied_device_name: Option<String>,
    mirrored: bool,
    replied_remote: Option<String>,
}

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        kind: r.get(1)?,
        session_id: r.get(2)?,
        run_id: r.get(3)?,
        asker: r.get(4)?,
        request: r.get(5)?,
        created_ms: r.get(6)?,
        deadline_ms: r.get(7)?,
        detail: r.get(8)?,
        replied_by: r.get(9)?,
        settled_ms: r.get(10)?,
        dismissed: r.get(11)?,
        approval: r.get(12)?,
        tool_use_id: r.get(13)?,
        parked_ms: r.get(14)?,
        transcript: r.get(15)?,
        replied_device: r.get(16)?,
        replied_device_name: r.get(17)?,
        mirrored: r.get(18)?,
        replied_remote: r.get(19)?,
    })
}

impl RawRow {
    fn into_record(self) -> Result<Record, StoreError> {
        let bad = |column: &'static str, e: &dyn std::fmt::Display| StoreError::Corrupt {
            row: format!("item {}", self.id),
            column,
            reason: e.to_string(),
        };
        Ok(Record {
            id: ItemId(self.id.parse().map_err(|e| bad("id", &e))?),
            kind: self.kind.clone(),
            session_id: self.session_id.clone(),
            run_id: self.run_id,
            asker: serde_json::from_str(&self.asker).map_err(|e| bad("asker", &e))?,
            request: serde_json::from_str(&self.request).map_err(|e| bad("request", &e))?,
            approval: match &self.approval {
                Some(approval) => {
                    Some(serde_json::from_str(approval).map_err(|e| bad("approval", &e))?)
                }
                None => None,
            },
            created_ms: self.created_ms.max(0) as u64,
            deadline_ms: self.deadline_ms.max(0) as u64,
            outcome: match &self.detail {
                Some(detail) => Some(serde_json::from_str(detail).map_err(|e| bad("outcome", &e))?),
                None => None,
            },
            replied_by: self.replied_by.clone(),
            replied_device: match &self.replied_device {
                Some(id) => Some((
                    id.parse().map_err(|e| bad("replied_device", &e))?,
                    self.replied_device_name.clone(),
                )),
                None => None,
            },
            replied_remote: match &self.replied_remote {
                Some(remote) => {
                    Some(serde_json::from_str(remote).map_err(|e| bad("replied_remote", &e))?)
                }
                None => None,
            },
            settled_ms: self.settled_ms.map(|ms| ms.max(0) as u64),
            dismissed: self.dismissed,
            mirrored: self.mirrored,
            parking: self.tool_use_id.clone().map(|tool_use_id| Parking {
                tool_use_id,
                parked_at: self
                    .parked_ms
                    .map(|ms| UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)),
                transcript: self.transcript.clone().map(PathBuf::from),
            }),
        })
    }
}

/// The item writes, made on the store's connection while it is held for
/// them: a statement each ([`Store::insert`] and its kin), or several in
/// one transaction ([`Store::together`]).
#[derive(Debug)]
pub struct Writes<'a> {
    store: &'a Store,
    conn: &'a rusqlite::Connection,
}

impl Writes<'_> {
    /// [`Store::insert`].
    pub fn insert(&self, item: &Item) -> Result<(), StoreError> {
        self.execute(
                "INSERT INTO items (id, kind, session_id, run_id, asker, request, created_ms, deadline_ms, approval, tool_use_id, parked_ms, transcript, mirrored)
                 VALUES (?1, ?8, ?2, ?7, ?3, ?4, ?5, ?6, ?9, ?10, ?11, ?12, ?13)
                 ON CONFLICT (id) DO NOTHING",
                params![
                    item.id.to_string(),
                    item.session_id,
                    to_json(&item.asker),
                    to_json(&item.request),
                    unix_ms(item.created_at) as i64,
                    unix_ms(item.deadline()) as i64,
                    item.run_id,
                    item.kind(),
                    item.approval.as_ref().map(to_json),
                    item.parking.as_ref().map(|p| p.tool_use_id.clone()),
                    item.parked_at().map(|at| unix_ms(at) as i64),
                    item.parking
                        .as_ref()
                        .and_then(|p| p.transcript.as_ref())
                        .map(|t| t.to_string_lossy().into_owned()),
                    item.mirrored,
                ],
            )
            .map(|_| ())
    }

    /// [`Store::settle_at`].
    pub fn settle_at(
        &self,
        id: ItemId,
        outcome: &Outcome,
        replied_by: Option<&Surface>,
        at: SystemTime,
    ) -> Result<bool, StoreError> {
        let detail = serde_json::to_string(outcome)?;
        let remote = replied_by.and_then(Surface::remote).map(to_json);
        self.execute(
                "UPDATE items SET outcome = ?2, detail = ?3, replied_by = ?4, settled_ms = ?5, replied_device = ?6, replied_remote = ?7
                 WHERE id = ?1 AND outcome IS NULL",
                params![
                    id.to_string(),
                    outcome.name(),
                    detail,
                    replied_by.map(Surface::name),
                    unix_ms(at) as i64,
                    replied_by.and_then(Surface::device).map(|d| d.to_string()),
                    remote,
                ],
            )
            .map(|n| n == 1)
    }

    /// [`Store::park`].
    pub fn park(&self, id: ItemId, at: SystemTime) -> Result<bool, StoreError> {
        self.execute(
            "UPDATE items SET parked_ms = ?2 WHERE id = ?1 AND outcome IS NULL",
            params![id.to_string(), unix_ms(at) as i64],
        )
        .map(|n| n == 1)
    }

    fn execute(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
        super::execute_on(self.conn, sql, params).map_err(|e| self.store.sql(e))
    }
}
