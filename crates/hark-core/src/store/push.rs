//! The phone push's one-time answer tokens: each bound to an item and the
//! choice its button stands for, good until it expires (a parked item's,
//! until the item settles), taken once. Only their hashes are kept (see
//! [`crate::pairing::hash`]).

use std::time::SystemTime;

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, unix_ms};
use crate::model::ids::ItemId;

/// What taking a push token found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushTaken {
    /// Good: now used. Its item and the choice its button stands for.
    Taken { item: ItemId, choice: String },
    /// It was taken before.
    Used,
    /// Its time ran out.
    Expired,
    /// No token has that hash.
    Unknown,
}

/// How long a used or expired token's row is kept (to say "used" rather
/// than "unknown"), past its expiry or its item's settling.
const KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// The expiry of a token that lasts until its item settles.
const UNTIL_SETTLED: i64 = i64::MAX;

impl Store {
    /// Keeps a push token (its hash) for `item`'s `choice` until `expires`
    /// (`None`: until the item settles); rows long expired, or of items
    /// long settled, are dropped.
    pub fn add_push_token(
        &self,
        token_hash: &str,
        item: ItemId,
        choice: &str,
        expires: Option<SystemTime>,
    ) -> Result<(), StoreError> {
        let now = self.now_ms();
        let conn = self.lock();
        conn.execute(
            "DELETE FROM push_tokens WHERE expires_ms <= ?1
               OR item_id IN (SELECT id FROM items WHERE settled_ms <= ?1)",
            [now - KEPT_MS],
        )
        .map_err(|e| self.sql(e))?;
        conn.execute(
            "INSERT INTO push_tokens (token_hash, item_id, choice, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                token_hash,
                item.to_string(),
                choice,
                now,
                expires.map_or(UNTIL_SETTLED, |at| unix_ms(at) as i64)
            ],
        )
        .map(|_| ())
        .map_err(|e| self.sql(e))
    }

    /// Makes `item`'s tokens not yet used last until it settles (it
    /// parked: it waits with no deadline, and so do its buttons).
    pub fn hold_push_tokens(&self, item: ItemId) -> Result<(), StoreError> {
        let now = self.now_ms();
        self.lock()
            .execute(
                "UPDATE push_tokens SET expires_ms = ?2
                 WHERE item_id = ?1 AND used_ms IS NULL AND expires_ms > ?3",
                params![item.to_string(), UNTIL_SETTLED, now],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Takes the push token `token_hash`, once: a good one is marked used
    /// in the same statement that finds it, so two racing takes cannot
    /// both get it.
    pub fn take_push_token(&self, token_hash: &str) -> Result<PushTaken, StoreError> {
        let now = self.now_ms();
        let conn = self.lock();
        let taken = conn
            .query_row(
                "UPDATE push_tokens SET used_ms = ?2
                 WHERE token_hash = ?1 AND used_ms IS NULL AND expires_ms > ?2
                 RETURNING item_id, choice",
                params![token_hash, now],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some((item, choice)) = taken {
            let item = item.parse().map_err(|e: uuid::Error| StoreError::Corrupt {
                row: format!("push token of item {item}"),
                column: "item_id",
                reason: e.to_string(),
            })?;
            return Ok(PushTaken::Taken {
                item: ItemId(item),
                choice,
            });
        }
        let found = conn
            .query_row(
                "SELECT used_ms FROM push_tokens WHERE token_hash = ?1",
                [token_hash],
                |r| r.get::<_, Option<i64>>(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(match found {
            Some(Some(_)) => PushTaken::Used,
            Some(None) => PushTaken::Expired,
            None => PushTaken::Unknown,
        })
    }
}
