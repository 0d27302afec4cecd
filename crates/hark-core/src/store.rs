//! The store: every item and its outcome, in a SQLite file that survives
//! restarts (`HARK_DATA_DIR`, else the platform data dir, `hark.db`).
//!
//! WAL mode: every statement commits to the log before it returns, so a
//! killed process loses no settled outcome (`synchronous = NORMAL` keeps that
//! guarantee for process crashes without an fsync per answer; only a power
//! loss could drop the last moments).
//! The schema is versioned (`PRAGMA user_version`) and migrated forward on
//! open. Items still pending when hark stopped are closed out on the next
//! open as cancelled ("hark restarted"): their agents already got an error
//! when the socket closed, and nothing stays pending forever.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, named_params, params};
use serde::{Deserialize, Serialize};

use crate::approval::Approval;
use crate::item::{Asker, Item, ItemId, Outcome};
use crate::schema::AskRequest;
use crate::text::clip;

/// The reason recorded for items a restart found pending.
pub const RESTARTED: &str = "hark restarted before it was answered";

/// Migrations, in order; `user_version` counts how many have run.
const MIGRATIONS: &[&str] = &[
    r#"
    CREATE TABLE items (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL,
        run_id      TEXT,
        session_id  TEXT NOT NULL,
        asker       TEXT NOT NULL,
        request     TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        deadline_ms INTEGER NOT NULL,
        outcome     TEXT,
        detail      TEXT,
        replied_by  TEXT,
        settled_ms  INTEGER
    );
    CREATE INDEX items_by_created ON items (created_ms);
    CREATE INDEX items_by_outcome ON items (outcome);
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        command     TEXT,
        cwd         TEXT,
        status      TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        finished_ms INTEGER
    );
"#,
    r#"
    ALTER TABLE items ADD COLUMN dismissed INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
    ALTER TABLE items ADD COLUMN approval TEXT;
"#,
    r#"
    ALTER TABLE runs ADD COLUMN exit_code INTEGER;
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    CREATE INDEX runs_by_created ON runs (created_ms);
    CREATE INDEX items_by_run ON items (run_id);
"#,
    r#"
    ALTER TABLE runs ADD COLUMN result TEXT;
    ALTER TABLE runs ADD COLUMN cost_usd REAL;
"#,
    r#"
    CREATE INDEX items_by_session ON items (session_id, created_ms);
"#,
];

/// A run that ended and is not among the newest `:keep` runs.
const PAST_RUN: &str = "status != 'running' AND id NOT IN
    (SELECT id FROM runs ORDER BY created_ms DESC, rowid DESC LIMIT :keep)";

/// A count as SQLite takes it (a count past its range means "all").
fn sql_count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// How much of an agent's final result a run's record keeps.
const RESULT_KEPT: usize = 4000;

/// A dispatched run's state, as the inbox shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Running, with an item waiting on the operator.
    Waiting,
    /// The agent exited 0.
    Finished,
    /// The agent exited otherwise, or its `hark run` vanished.
    Failed,
}

/// One dispatched run (`hark run`), with the items it asked.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub session_id: String,
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
}

/// An agent session as the inbox shows it: who asks under it, and how it
/// stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session_id: String,
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
}

/// A run as `hark run` announces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    pub id: String,
    pub session_id: String,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The `hark run` process: a run whose process is gone is failed.
    pub pid: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the store {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the store {} was written by a newer hark (schema {found}, this hark knows {known})", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        known: usize,
    },
    #[error("a stored row is unreadable: {0}")]
    Corrupt(String),
}

/// One stored item, pending or settled.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: ItemId,
    pub kind: String,
    pub session_id: String,
    /// The dispatched run that asked, if any.
    #[serde(default)]
    pub run_id: Option<String>,
    pub asker: Asker,
    pub request: AskRequest,
    /// What a write-mode approval asks to allow (`kind` is then `approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    pub created_ms: u64,
    pub deadline_ms: u64,
    /// `None` while pending.
    pub outcome: Option<Outcome>,
    /// Which surface replied (`script`, `terminal`, `cli`, `desktop`), when one did.
    pub replied_by: Option<String>,
    pub settled_ms: Option<u64>,
    /// The operator dismissed it from the desktop inbox (it stays in the history).
    #[serde(default)]
    pub dismissed: bool,
}

/// Which records to list.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Filter {
    /// Only pending (`Some(true)`) or only settled (`Some(false)`) items.
    pub pending: Option<bool>,
    /// Only items with this outcome name (`answered`, `timed_out`, …).
    pub outcome: Option<String>,
    pub session_id: Option<String>,
    /// One item by id.
    pub id: Option<ItemId>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

/// A handle to the store file. One connection, used for short statements.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
}

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Record {
    /// The record of an item, pending or settled.
    pub fn new(item: &Item, outcome: Option<Outcome>, replied_by: Option<String>) -> Record {
        let settled_ms = outcome.as_ref().map(|_| unix_ms(SystemTime::now()));
        Record {
            id: item.id,
            kind: item.kind().into(),
            session_id: item.session_id.clone(),
            run_id: item.run_id.clone(),
            asker: item.asker.clone(),
            request: item.request.clone(),
            approval: item.approval.clone(),
            created_ms: unix_ms(item.created_at),
            deadline_ms: unix_ms(item.deadline()),
            outcome,
            replied_by,
            settled_ms,
            dismissed: false,
        }
    }
}

impl Store {
    /// `$HARK_DATA_DIR/hark.db`, else the platform data dir's.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("HARK_DATA_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("hark.db"));
        }
        directories::ProjectDirs::from("", "", "hark").map(|d| d.data_dir().join("hark.db"))
    }

    /// Opens (creating and migrating as needed) the store at `path`, and
    /// closes out items a previous run left pending.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::socket::ensure_private_dir(dir).map_err(|e| StoreError::Dir {
                path: dir.to_owned(),
                source: std::io::Error::other(e.to_string()),
            })?;
        }
        let sql = |source| StoreError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        let known = MIGRATIONS.len();
        if version > known as i64 {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found: version,
                known,
            });
        }
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn.transaction().map_err(sql)?;
            tx.execute_batch(migration).map_err(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)
                .map_err(sql)?;
            tx.commit().map_err(sql)?;
        }
        let store = Store {
            path: path.to_owned(),
            conn: Mutex::new(conn),
        };
        let closed = store.close_out_pending()?;
        if closed > 0 {
            tracing::info!(
                items = closed,
                "items left pending by the last run are now unanswered ({RESTARTED})"
            );
        }
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn close_out_pending(&self) -> Result<usize, StoreError> {
        let detail = serde_json::to_string(&Outcome::Cancelled {
            reason: RESTARTED.into(),
        })
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.lock()
            .execute(
                "UPDATE items SET outcome = 'cancelled', detail = ?1, settled_ms = ?2 WHERE outcome IS NULL",
                params![detail, unix_ms(SystemTime::now()) as i64],
            )
            .map_err(|e| self.sql(e))
    }

    /// Records a newly pending item.
    pub fn insert(&self, item: &Item) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT INTO items (id, kind, session_id, run_id, asker, request, created_ms, deadline_ms, approval)
                 VALUES (?1, ?8, ?2, ?7, ?3, ?4, ?5, ?6, ?9)",
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
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Records an item's outcome. Only a pending row is updated, so a
    /// settled outcome is never overwritten.
    pub fn settle(
        &self,
        id: ItemId,
        outcome: &Outcome,
        replied_by: Option<&str>,
    ) -> Result<bool, StoreError> {
        let detail =
            serde_json::to_string(outcome).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.lock()
            .execute(
                "UPDATE items SET outcome = ?2, detail = ?3, replied_by = ?4, settled_ms = ?5
                 WHERE id = ?1 AND outcome IS NULL",
                params![
                    id.to_string(),
                    outcome.name(),
                    detail,
                    replied_by,
                    unix_ms(SystemTime::now()) as i64
                ],
            )
            .map(|n| n == 1)
            .map_err(|e| self.sql(e))
    }

    /// Deletes settled items, keeping the newest `keep`; returns how many went.
    pub fn prune_settled(&self, keep: u64) -> Result<usize, StoreError> {
        self.lock()
            .execute(
                "DELETE FROM items WHERE outcome IS NOT NULL AND id NOT IN
                   (SELECT id FROM items WHERE outcome IS NOT NULL ORDER BY settled_ms DESC LIMIT ?1)",
                [sql_count(keep)],
            )
            .map_err(|e| self.sql(e))
    }

    /// Deletes ended runs beyond the newest `keep` runs; a running run is
    /// kept. Returns how many were deleted.
    pub fn prune_runs(&self, keep: u64) -> Result<usize, StoreError> {
        self.lock()
            .execute(
                &format!("DELETE FROM runs WHERE {PAST_RUN}"),
                named_params! {":keep": sql_count(keep)},
            )
            .map_err(|e| self.sql(e))
    }

    /// Whether run `id` is recorded as ended and is older than the newest
    /// `keep` runs (so its output log can go).
    pub fn run_is_past(&self, id: &str, keep: u64) -> Result<bool, StoreError> {
        self.lock()
            .query_row(
                &format!("SELECT EXISTS (SELECT 1 FROM runs WHERE id = :id AND {PAST_RUN})"),
                named_params! {":id": id, ":keep": sql_count(keep)},
                |row| row.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Whether a run with this id was recorded.
    pub fn has_run(&self, id: &str) -> Result<bool, StoreError> {
        self.lock()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
                [id],
                |row| row.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Records a run that started.
    pub fn run_started(&self, run: &RunStart) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO runs (id, session_id, command, cwd, status, created_ms, pid)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)",
                params![
                    run.id,
                    run.session_id,
                    run.command,
                    run.cwd,
                    unix_ms(SystemTime::now()) as i64,
                    run.pid
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Records how a run ended; false when no running run has that id.
    pub fn run_finished(
        &self,
        id: &str,
        exit_code: i32,
        result: Option<&str>,
        cost_usd: Option<f64>,
    ) -> Result<bool, StoreError> {
        let status = if exit_code == 0 { "finished" } else { "failed" };
        let result = result.map(|r| clip(r, RESULT_KEPT));
        self.lock()
            .execute(
                "UPDATE runs SET status = ?2, exit_code = ?3, finished_ms = ?4, result = ?5, cost_usd = ?6
                 WHERE id = ?1 AND status = 'running'",
                params![
                    id,
                    status,
                    exit_code,
                    unix_ms(SystemTime::now()) as i64,
                    result,
                    cost_usd
                ],
            )
            .map(|n| n == 1)
            .map_err(|e| self.sql(e))
    }

    /// The newest runs first, with their items counted. A run still marked
    /// running whose `hark run` is gone (killed) shows as failed.
    pub fn runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT r.id, r.session_id, r.command, r.cwd, r.status, r.created_ms, r.finished_ms,
                        r.exit_code, r.pid,
                        (SELECT COUNT(*) FROM items i WHERE i.run_id = r.id),
                        (SELECT COUNT(*) FROM items i WHERE i.run_id = r.id AND i.outcome IS NULL),
                        r.result, r.cost_usd
                 FROM runs r ORDER BY r.created_ms DESC, r.rowid DESC LIMIT ?1",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([limit], |r| {
                let stored: String = r.get(4)?;
                let pid: Option<u32> = r.get(8)?;
                let pending: u32 = r.get(10)?;
                let status = match stored.as_str() {
                    "finished" => RunStatus::Finished,
                    "running" if pid.is_some_and(|pid| !process_alive(pid)) => RunStatus::Failed,
                    "running" if pending > 0 => RunStatus::Waiting,
                    "running" => RunStatus::Running,
                    _ => RunStatus::Failed,
                };
                Ok(RunRecord {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    command: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    cwd: r.get(3)?,
                    status,
                    created_ms: r.get::<_, i64>(5)?.max(0) as u64,
                    finished_ms: r.get::<_, Option<i64>>(6)?.map(|ms| ms.max(0) as u64),
                    exit_code: r.get(7)?,
                    items: r.get(9)?,
                    pending,
                    result: r.get(11)?,
                    cost_usd: r.get(12)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The sessions that asked, those with items waiting first, then the
    /// latest to ask.
    pub fn sessions(&self, limit: u32) -> Result<Vec<SessionRecord>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT s.session_id, s.items, s.pending, s.last_ms,
                        (SELECT asker FROM items i WHERE i.session_id = s.session_id
                           ORDER BY i.created_ms DESC, i.rowid DESC LIMIT 1),
                        (SELECT outcome FROM items i WHERE i.session_id = s.session_id
                           AND i.outcome IS NOT NULL ORDER BY i.settled_ms DESC, i.rowid DESC LIMIT 1)
                 FROM (SELECT session_id, COUNT(*) AS items, SUM(outcome IS NULL) AS pending,
                              MAX(created_ms) AS last_ms
                       FROM items GROUP BY session_id
                       ORDER BY pending > 0 DESC, last_ms DESC LIMIT ?1) s
                 ORDER BY s.pending > 0 DESC, s.last_ms DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([limit], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        rows.map(|row| {
            let (session_id, items, pending, last_ms, asker, last_outcome) =
                row.map_err(|e| self.sql(e))?;
            let asker: Asker = serde_json::from_str(&asker)
                .map_err(|e| StoreError::Corrupt(format!("session {session_id}: asker: {e}")))?;
            Ok(SessionRecord {
                alive: asker.pid.map(process_alive),
                asker,
                session_id,
                items,
                pending,
                last_asked_ms: last_ms.max(0) as u64,
                last_outcome,
            })
        })
        .collect()
    }

    /// Hides a settled item from the desktop inbox. Pending items cannot be
    /// dismissed: they are answered, skipped or left to time out.
    pub fn dismiss(&self, id: ItemId) -> Result<bool, StoreError> {
        self.lock()
            .execute(
                "UPDATE items SET dismissed = 1 WHERE id = ?1 AND outcome IS NOT NULL",
                [id.to_string()],
            )
            .map(|n| n == 1)
            .map_err(|e| self.sql(e))
    }

    pub fn get(&self, id: ItemId) -> Result<Option<Record>, StoreError> {
        let conn = self.lock();
        let row = conn
            .query_row(
                &format!("{SELECT} WHERE id = ?1"),
                [id.to_string()],
                raw_row,
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        row.map(RawRow::into_record).transpose()
    }

    /// Lists records, newest first (pending ones before settled ones).
    pub fn list(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
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
            args.push(session.clone());
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
        rows.into_iter().map(RawRow::into_record).collect()
    }
}

const SELECT: &str = "SELECT id, kind, session_id, run_id, asker, request, created_ms, deadline_ms, detail, replied_by, settled_ms, dismissed, approval FROM items";

/// A row as SQLite returns it, before its JSON columns are read.
struct RawRow {
    id: String,
    kind: String,
    session_id: String,
    run_id: Option<String>,
    asker: String,
    request: String,
    created_ms: i64,
    deadline_ms: i64,
    detail: Option<String>,
    replied_by: Option<String>,
    settled_ms: Option<i64>,
    dismissed: bool,
    approval: Option<String>,
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
    })
}

impl RawRow {
    fn into_record(self) -> Result<Record, StoreError> {
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::Corrupt(format!("item {}: {what}: {e}", self.id))
        };
        Ok(Record {
            id: ItemId(self.id.parse().map_err(|e| bad("id", &e))?),
            kind: self.kind.clone(),
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
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
            settled_ms: self.settled_ms.map(|ms| ms.max(0) as u64),
            dismissed: self.dismissed,
        })
    }
}

/// Whether a process is still there (where the platform tells; else assume so).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// A JSON column's text.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::Resolution;
    use crate::validate::{Rules, validate};
    use serde_json::json;

    fn item(session: &str) -> Item {
        Item {
            id: ItemId::random(),
            session_id: session.into(),
            run_id: Some("run-1".into()),
            asker: Asker {
                pid: Some(42),
                cwd: Some("/repo".into()),
                command: Some("claude -p".into()),
                client: None,
            },
            request: validate(
                &json!({"questions": [{"question": "Go?", "header": "Go", "multiSelect": false,
                    "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}]}]}),
                Rules::default(),
            )
            .unwrap(),
            approval: None,
            created_at: SystemTime::now(),
            timeout: Duration::from_secs(300),
        }
    }

    #[test]
    fn items_round_trip_and_settle_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db")).unwrap();
        let a = item("s1");
        store.insert(&a).unwrap();
        let pending = store.get(a.id).unwrap().unwrap();
        assert_eq!(pending.outcome, None);
        assert_eq!(pending.asker.command.as_deref(), Some("claude -p"));
        assert_eq!(pending.run_id.as_deref(), Some("run-1"));
        assert_eq!(pending.request, a.request);

        let answered = Outcome::Answered(Resolution {
            answers: [(
                "Go?".to_owned(),
                crate::schema::AnswerValue::One("No".into()),
            )]
            .into(),
            defaulted: vec![],
        });
        assert!(store.settle(a.id, &answered, Some("cli")).unwrap());
        assert!(
            !store
                .settle(a.id, &Outcome::TimedOut { after_ms: 1 }, None)
                .unwrap()
        );
        let settled = store.get(a.id).unwrap().unwrap();
        assert_eq!(settled.outcome, Some(answered));
        assert_eq!(settled.replied_by.as_deref(), Some("cli"));
        assert!(store.dismiss(a.id).unwrap());
        assert!(store.get(a.id).unwrap().unwrap().dismissed);
    }

    #[test]
    fn a_reopen_closes_out_what_was_left_pending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hark.db");
        let (left, done) = (item("s1"), item("s1"));
        {
            let store = Store::open(&path).unwrap();
            store.insert(&left).unwrap();
            store.insert(&done).unwrap();
            store
                .settle(done.id, &Outcome::TimedOut { after_ms: 300_000 }, None)
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.get(left.id).unwrap().unwrap().outcome,
            Some(Outcome::Cancelled {
                reason: RESTARTED.into()
            })
        );
        assert_eq!(
            store.get(done.id).unwrap().unwrap().outcome,
            Some(Outcome::TimedOut { after_ms: 300_000 })
        );
        assert!(
            store
                .list(&Filter {
                    pending: Some(true),
                    ..Filter::default()
                })
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn lists_filter_and_page() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db")).unwrap();
        let items: Vec<Item> = (0..5)
            .map(|i| item(if i < 3 { "a" } else { "b" }))
            .collect();
        for it in &items {
            store.insert(it).unwrap();
        }
        store
            .settle(items[0].id, &Outcome::TimedOut { after_ms: 5 }, None)
            .unwrap();
        let by = |f: Filter| store.list(&f).unwrap().len();
        assert_eq!(by(Filter::default()), 5);
        assert_eq!(
            by(Filter {
                pending: Some(true),
                ..Filter::default()
            }),
            4
        );
        assert_eq!(
            by(Filter {
                outcome: Some("timed_out".into()),
                ..Filter::default()
            }),
            1
        );
        assert_eq!(
            by(Filter {
                session_id: Some("b".into()),
                ..Filter::default()
            }),
            2
        );
        assert_eq!(
            by(Filter {
                limit: Some(2),
                offset: Some(4),
                ..Filter::default()
            }),
            1
        );
        let all = store.list(&Filter::default()).unwrap();
        assert!(
            all[..4].iter().all(|r| r.outcome.is_none()),
            "pending items come first"
        );
    }

    #[test]
    fn pruning_keeps_the_newest_settled_items_and_every_pending_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db")).unwrap();
        let items: Vec<Item> = (0..4).map(|_| item("s")).collect();
        for it in &items {
            store.insert(it).unwrap();
        }
        for it in &items[..3] {
            store
                .settle(it.id, &Outcome::TimedOut { after_ms: 1 }, None)
                .unwrap();
        }
        assert_eq!(store.prune_settled(1).unwrap(), 2);
        assert_eq!(store.list(&Filter::default()).unwrap().len(), 2);
        assert!(store.get(items[3].id).unwrap().is_some());
        assert_eq!(store.prune_settled(0).unwrap(), 1);
        assert_eq!(store.list(&Filter::default()).unwrap().len(), 1);
    }

    #[test]
    fn pruning_runs_keeps_the_newest_and_every_running_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db")).unwrap();
        let ids: Vec<String> = (0..5).map(|n| format!("run-{n}")).collect();
        for id in &ids {
            store
                .run_started(&RunStart {
                    id: id.clone(),
                    session_id: "s".into(),
                    command: "hark run".into(),
                    cwd: None,
                    pid: std::process::id(),
                })
                .unwrap();
        }
        // The oldest is still running; the others ended.
        for id in &ids[1..] {
            assert!(store.run_finished(id, 0, None, None).unwrap());
        }
        assert!(store.run_is_past("run-1", 3).unwrap());
        assert!(!store.run_is_past("run-2", 3).unwrap());
        assert!(!store.run_is_past("run-0", 3).unwrap(), "still running");
        assert!(!store.run_is_past("never-recorded", 0).unwrap());

        assert_eq!(store.prune_runs(2).unwrap(), 2);
        let left: Vec<String> = store.runs(10).unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(left, ["run-4", "run-3", "run-0"]);
    }

    #[test]
    fn sessions_sum_up_their_items_waiting_ones_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db")).unwrap();
        let (a1, a2, b) = (item("a"), item("a"), item("b"));
        for it in [&a1, &a2, &b] {
            store.insert(it).unwrap();
        }
        store
            .settle(a1.id, &Outcome::TimedOut { after_ms: 1 }, None)
            .unwrap();
        store
            .settle(
                a2.id,
                &Outcome::Skipped {
                    unconfirmed_defaults: Default::default(),
                },
                Some("cli"),
            )
            .unwrap();
        let sessions = store.sessions(10).unwrap();
        let names: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(names, ["b", "a"], "the one waiting comes first");
        assert_eq!((sessions[0].items, sessions[0].pending), (1, 1));
        assert_eq!((sessions[1].items, sessions[1].pending), (2, 0));
        assert_eq!(sessions[1].last_outcome.as_deref(), Some("skipped"));
        assert_eq!(sessions[1].asker.command.as_deref(), Some("claude -p"));
        assert_eq!(sessions[1].alive, Some(Path::new("/proc/42").exists()));
        assert_eq!(store.sessions(1).unwrap().len(), 1);
    }

    #[test]
    fn a_store_from_a_newer_hark_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hark.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        assert!(matches!(
            Store::open(&path),
            Err(StoreError::TooNew { found: 99, .. })
        ));
    }
}
