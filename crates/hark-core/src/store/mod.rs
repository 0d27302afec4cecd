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
//! when the socket closed. A parked item is not: its agent is paused, not
//! waiting on a socket, and it waits for the operator across restarts.

mod devices;
mod items;
pub mod paused;
mod push;
mod runs;
mod sessions;
#[cfg(test)]
mod tests;

pub use devices::{DeviceRecord, NewDevice, WebSessionRecord};
pub use items::{Record, Writes};
pub use push::PushTaken;
pub use runs::RunRecord;
pub use sessions::SessionRecord;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use serde::Serialize;

use crate::model::ids::{Clock, RunId, SessionId};

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
    r#"
    ALTER TABLE items ADD COLUMN tool_use_id TEXT;
    ALTER TABLE items ADD COLUMN parked_ms INTEGER;
    CREATE INDEX items_by_tool_use ON items (tool_use_id);
"#,
    r#"
    ALTER TABLE items ADD COLUMN transcript TEXT;
"#,
    r#"
    ALTER TABLE runs ADD COLUMN confinement TEXT;
"#,
    // The web surface: which device replied, the paired devices, their
    // sessions and the pairing codes (hashes of the secrets only).
    r#"
    ALTER TABLE items ADD COLUMN replied_device TEXT;
    CREATE TABLE devices (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL,
        paired_ms    INTEGER NOT NULL,
        last_seen_ms INTEGER,
        revoked_ms   INTEGER
    );
    CREATE TABLE web_sessions (
        token_hash TEXT PRIMARY KEY,
        device_id  TEXT NOT NULL,
        csrf       TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL
    );
    CREATE INDEX web_sessions_by_device ON web_sessions (device_id);
    CREATE TABLE pairing_codes (
        code_hash  TEXT PRIMARY KEY,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL
    );
"#,
    // The phone push's one-time answer tokens (their hashes), each bound
    // to an item and the choice its button stands for.
    r#"
    CREATE TABLE push_tokens (
        token_hash TEXT PRIMARY KEY,
        item_id    TEXT NOT NULL,
        choice     TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        used_ms    INTEGER
    );
    CREATE INDEX push_tokens_by_item ON push_tokens (item_id);
"#,
    // The team's hub: items filed from other hosts (their host settles
    // them, so a restart here does not), and the team's operator whose
    // reply won there.
    r#"
    ALTER TABLE items ADD COLUMN mirrored INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE items ADD COLUMN replied_remote TEXT;
"#,
    // Most items belong to no dispatched run and no gated tool call: their
    // indexes hold only the items that do, so a question asked writes two
    // fewer pages (7.4 instead of 9.7 for its insert and its answer). The
    // lookups (`run_id = ?`, `tool_use_id = ?`) imply the condition, so
    // they still use them.
    r#"
    DROP INDEX items_by_run;
    CREATE INDEX items_by_run ON items (run_id) WHERE run_id IS NOT NULL;
    DROP INDEX items_by_tool_use;
    CREATE INDEX items_by_tool_use ON items (tool_use_id) WHERE tool_use_id IS NOT NULL;
"#,
];

/// A count as SQLite takes it (a count past its range means "all").
fn sql_count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What [`Store::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// SQLite's `quick_check` found nothing wrong.
    pub sound: bool,
    /// What it said (`ok`, or the first problems).
    pub verdict: String,
    /// The schema version (migrations applied).
    pub schema: i64,
    /// It is this hark's schema (else it is migrated when hark opens it).
    pub current: bool,
    pub items: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the data directory: {0}")]
    Dir(#[from] crate::files::PrivateDirError),
    #[error("the store {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The store opens but takes no write (its disk is full, its file or
    /// directory is read-only): every item from the first one on would go
    /// unrecorded.
    #[error("the store {} cannot be written: {source}", path.display())]
    Unwritable {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the store {} was written by a newer hark (schema {found}, this hark knows {known})", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        known: usize,
    },
    /// A stored column does not read back (written by something else, or damaged).
    #[error("the stored {row}'s {column} is unreadable: {reason}")]
    Corrupt {
        /// Which row: `item <id>`, `session <id>`.
        row: String,
        column: &'static str,
        reason: String,
    },
    #[error("an outcome cannot be written: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A handle to the store file. One connection, used for short statements.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// What rows are stamped with (settled, started, finished).
    clock: Clock,
}

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Store {
    /// `$HARK_DATA_DIR/hark.db`, else the platform data dir's.
    pub fn default_path() -> Result<PathBuf, crate::files::NoHomeError> {
        if let Some(dir) = crate::env::var_os(crate::env::DATA_DIR) {
            return Ok(PathBuf::from(dir).join("hark.db"));
        }
        Ok(crate::files::project_dirs()?.data_dir().join("hark.db"))
    }

    /// Opens (creating and migrating as needed) the store at `path`, makes
    /// sure it takes writes, and closes out items a previous run left
    /// pending; `clock` stamps its rows.
    pub fn open(path: &Path, clock: Clock) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::files::ensure_private_dir(dir)?;
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
        // A store that opens but cannot be written is found out now, not at
        // the first question: the header is rewritten as it is.
        conn.pragma_update(None, "user_version", known as i64)
            .map_err(|source| StoreError::Unwritable {
                path: path.to_owned(),
                source,
            })?;
        let store = Store {
            path: path.to_owned(),
            conn: Mutex::new(conn),
            clock,
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

    /// Looks at the store at `path` without changing it (read-only: no
    /// migration, nothing closed out): whether SQLite finds it sound, its
    /// schema and how many items it holds. `None` when there is no store yet.
    pub fn check(path: &Path) -> Result<Option<Checked>, StoreError> {
        if !path.exists() {
            return Ok(None);
        }
        let sql = |source| StoreError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(sql)?;
        let verdict: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(sql)?;
        let schema: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if schema > MIGRATIONS.len() as i64 {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found: schema,
                known: MIGRATIONS.len(),
            });
        }
        let items = if schema == 0 {
            0
        } else {
            conn.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
                .map_err(sql)?
        };
        Ok(Some(Checked {
            sound: verdict == "ok",
            verdict,
            schema,
            current: schema == MIGRATIONS.len() as i64,
            items,
        }))
    }

    /// The clock its rows are stamped with.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Now, as the rows store it.
    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now()) as i64
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets the file grow no more (`false` lifts the cap): a write that
    /// needs a new page fails as on a full disk.
    #[cfg(test)]
    pub(crate) fn cap_growth(&self, capped: bool) {
        let conn = self.lock();
        let pages: i64 = conn
            .pragma_query_value(None, "page_count", |r| r.get(0))
            .unwrap();
        let cap = if capped { pages } else { i64::from(u32::MAX) };
        conn.pragma_update(None, "max_page_count", cap).unwrap();
    }

    /// Runs one statement through the connection's statement cache: the
    /// writes every item makes are parsed once, not at each item (the hub
    /// bench's daemons spent a third of their store time preparing them).
    fn execute(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
        execute_on(&self.lock(), sql, params).map_err(|e| self.sql(e))
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }
}

/// [`Store::execute`] on a connection held already.
fn execute_on(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)
        .and_then(|mut statement| statement.execute(params))
}

/// A JSON column's text.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// Whether a process is still there.
fn process_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(crate::platform::process_exists)
}

// Ids are stored as their text.
impl rusqlite::ToSql for SessionId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for SessionId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<SessionId> {
        String::column_result(value).map(SessionId::from)
    }
}

impl rusqlite::ToSql for RunId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.to_string()))
    }
}

impl FromSql for RunId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<RunId> {
        String::column_result(value)?
            .parse()
            .map_err(|e| FromSqlError::Other(Box::new(e)))
    }
}
