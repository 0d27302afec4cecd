//! The runs `hark run` dispatched, as they report themselves.

use rusqlite::{named_params, params};

use super::{Store, StoreError, process_alive, sql_count};
use crate::model::ids::{RunId, SessionId};
use crate::model::run::{Confinement, RunStart, RunStatus};
use crate::text::clip;

/// A run that ended and is not among the newest `:keep` runs.
const PAST_RUN: &str = "status != 'running' AND id NOT IN
    (SELECT id FROM runs ORDER BY created_ms DESC, rowid DESC LIMIT :keep)";

/// How much of an agent's final result a run's record keeps.
const RESULT_KEPT: usize = 4000;

/// One dispatched run (`hark run`), with the items it asked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
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
    /// Where its agent ran; none from a `hark run` that did not say.
    pub confinement: Option<Confinement>,
}

impl Store {
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
    pub fn run_is_past(&self, id: &RunId, keep: u64) -> Result<bool, StoreError> {
        self.lock()
            .query_row(
                &format!("SELECT EXISTS (SELECT 1 FROM runs WHERE id = :id AND {PAST_RUN})"),
                named_params! {":id": id, ":keep": sql_count(keep)},
                |row| row.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Whether a run with this id was recorded.
    pub fn has_run(&self, id: &RunId) -> Result<bool, StoreError> {
        self.lock()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
                [id],
                |row| row.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    /// Records a run that started, or that a new process resumed (its pid
    /// is then updated; its start stays).
    pub fn run_started(&self, run: &RunStart) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT INTO runs (id, session_id, command, cwd, status, created_ms, pid, confinement)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)
                 ON CONFLICT (id) DO UPDATE SET status = 'running', pid = excluded.pid,
                   confinement = COALESCE(excluded.confinement, confinement)",
                params![
                    run.id,
                    run.session_id,
                    run.command,
                    run.cwd,
                    self.now_ms(),
                    run.pid,
                    run.confinement
                        .as_ref()
                        .and_then(|c| serde_json::to_string(c).ok())
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Records how a run ended; false when no running run has that id.
    pub fn run_finished(
        &self,
        id: &RunId,
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
                    self.now_ms(),
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
        self.runs_page(limit, 0)
    }

    /// [`Store::runs`] from the `offset`th on, for a listing read page by page.
    pub fn runs_page(&self, limit: u32, offset: u32) -> Result<Vec<RunRecord>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT r.id, r.session_id, r.command, r.cwd, r.status, r.created_ms, r.finished_ms,
                        r.exit_code, r.pid,
                        (SELECT COUNT(*) FROM items i WHERE i.run_id = r.id),
                        (SELECT COUNT(*) FROM items i WHERE i.run_id = r.id AND i.outcome IS NULL),
                        r.result, r.cost_usd,
                        (SELECT COUNT(*) FROM items i
                          WHERE i.run_id = r.id AND i.outcome IS NULL AND i.parked_ms IS NOT NULL),
                        r.confinement
                 FROM runs r ORDER BY r.created_ms DESC, r.rowid DESC LIMIT ?1 OFFSET ?2",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([limit, offset], |r| {
                let stored: String = r.get(4)?;
                let pid: Option<u32> = r.get(8)?;
                let pending: u32 = r.get(10)?;
                let parked: u32 = r.get(13)?;
                let status = match stored.as_str() {
                    "finished" => RunStatus::Finished,
                    // Parked, its `hark run` may be gone: it is resumed
                    // when its question is answered.
                    "running" if parked > 0 => RunStatus::Parked,
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
                    confinement: r
                        .get::<_, Option<String>>(14)?
                        .and_then(|c| serde_json::from_str(&c).ok()),
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}
