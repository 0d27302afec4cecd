//! The agent sessions that asked, summed up from their items.

use super::{Store, StoreError, process_alive};
use crate::model::ids::SessionId;
use crate::model::item::Asker;

/// An agent session as the inbox shows it: who asks under it, and how it
/// stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
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
}

impl Store {
    /// The sessions that asked, those with items waiting first, then the
    /// latest to ask.
    pub fn sessions(&self, limit: u32) -> Result<Vec<SessionRecord>, StoreError> {
        self.sessions_page(limit, 0)
    }

    /// [`Store::sessions`] from the `offset`th on, for a listing read page by page.
    pub fn sessions_page(&self, limit: u32, offset: u32) -> Result<Vec<SessionRecord>, StoreError> {
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
                       ORDER BY pending > 0 DESC, last_ms DESC LIMIT ?1 OFFSET ?2) s
                 ORDER BY s.pending > 0 DESC, s.last_ms DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([limit, offset], |r| {
                Ok((
                    r.get::<_, SessionId>(0)?,
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
            let asker: Asker = serde_json::from_str(&asker).map_err(|e| StoreError::Corrupt {
                row: format!("session {session_id}"),
                column: "asker",
                reason: e.to_string(),
            })?;
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
}
