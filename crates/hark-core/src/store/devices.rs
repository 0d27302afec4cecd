//! The web surface's paired devices, their sessions and the one-time
//! pairing codes. Only hashes of codes and session tokens are kept (see
//! [`crate::pairing`], which makes them): a copy of the store opens no
//! session.

use std::time::SystemTime;

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, unix_ms};
use crate::model::ids::DeviceId;

/// A paired device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRecord {
    pub id: DeviceId,
    /// What the operator called it when pairing (`Pixel 8`).
    pub name: String,
    pub paired_ms: u64,
    /// When one of its sessions last made a request.
    pub last_seen_ms: Option<u64>,
}

/// A live session of a device: the device, and the hash of the token its
/// every request carries ([`crate::pairing::csrf_matches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSessionRecord {
    pub device: DeviceRecord,
    pub csrf: String,
}

/// A new device with its first session, as [`Store::pair`] records it.
#[derive(Debug, Clone)]
pub struct NewDevice<'a> {
    pub id: DeviceId,
    pub name: &'a str,
    pub token_hash: &'a str,
    pub csrf: &'a str,
    pub session_expires: SystemTime,
}

fn ms(t: SystemTime) -> i64 {
    unix_ms(t) as i64
}

impl Store {
    /// Keeps a pairing code (its hash) until `expires`; codes already
    /// expired are dropped.
    pub fn add_pairing_code(&self, code_hash: &str, expires: SystemTime) -> Result<(), StoreError> {
        let now = self.now_ms();
        let conn = self.lock();
        conn.execute("DELETE FROM pairing_codes WHERE expires_ms <= ?1", [now])
            .map_err(|e| self.sql(e))?;
        conn.execute(
            "INSERT INTO pairing_codes (code_hash, created_ms, expires_ms) VALUES (?1, ?2, ?3)",
            params![code_hash, now, ms(expires)],
        )
        .map(|_| ())
        .map_err(|e| self.sql(e))
    }

    /// Takes the pairing code `code_hash` (once: it is deleted) and records
    /// the device with its first session, in one transaction. `None` when
    /// no unexpired code has that hash: nothing is recorded.
    pub fn pair(
        &self,
        code_hash: &str,
        device: &NewDevice<'_>,
    ) -> Result<Option<DeviceRecord>, StoreError> {
        let now = self.now_ms();
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.sql(e))?;
        let taken = tx
            .execute(
                "DELETE FROM pairing_codes WHERE code_hash = ?1 AND expires_ms > ?2",
                params![code_hash, now],
            )
            .map_err(|e| self.sql(e))?;
        if taken != 1 {
            return Ok(None);
        }
        tx.execute(
            "INSERT INTO devices (id, name, paired_ms, last_seen_ms) VALUES (?1, ?2, ?3, ?3)",
            params![device.id.to_string(), device.name, now],
        )
        .map_err(|e| self.sql(e))?;
        tx.execute(
            "INSERT INTO web_sessions (token_hash, device_id, csrf, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                device.token_hash,
                device.id.to_string(),
                device.csrf,
                now,
                ms(device.session_expires)
            ],
        )
        .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(Some(DeviceRecord {
            id: device.id,
            name: device.name.to_owned(),
            paired_ms: now as u64,
            last_seen_ms: Some(now as u64),
        }))
    }

    /// The live session whose token has `token_hash`, of a device not
    /// revoked; its device is marked seen now.
    pub fn web_session(&self, token_hash: &str) -> Result<Option<WebSessionRecord>, StoreError> {
        let now = self.now_ms();
        let conn = self.lock();
        let found = conn
            .query_row(
                "SELECT d.id, d.name, d.paired_ms, s.csrf FROM web_sessions s
                 JOIN devices d ON d.id = s.device_id
                 WHERE s.token_hash = ?1 AND s.expires_ms > ?2 AND d.revoked_ms IS NULL",
                params![token_hash, now],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((id, name, paired_ms, csrf)) = found else {
            return Ok(None);
        };
        conn.execute(
            "UPDATE devices SET last_seen_ms = ?2 WHERE id = ?1",
            params![id, now],
        )
        .map_err(|e| self.sql(e))?;
        Ok(Some(WebSessionRecord {
            device: DeviceRecord {
                id: parse_device(&id)?,
                name,
                paired_ms: paired_ms.max(0) as u64,
                last_seen_ms: Some(now as u64),
            },
            csrf,
        }))
    }

    /// The paired devices not revoked, the latest paired first.
    pub fn devices(&self) -> Result<Vec<DeviceRecord>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT id, name, paired_ms, last_seen_ms FROM devices
                 WHERE revoked_ms IS NULL ORDER BY paired_ms DESC, rowid DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        rows.map(|row| {
            let (id, name, paired_ms, last_seen_ms) = row.map_err(|e| self.sql(e))?;
            Ok(DeviceRecord {
                id: parse_device(&id)?,
                name,
                paired_ms: paired_ms.max(0) as u64,
                last_seen_ms: last_seen_ms.map(|ms| ms.max(0) as u64),
            })
        })
        .collect()
    }

    /// Revokes a device: its sessions are deleted at once; its row stays
    /// (revoked), so the history still names it. False when no paired
    /// device has that id.
    pub fn revoke_device(&self, id: DeviceId) -> Result<bool, StoreError> {
        let now = self.now_ms();
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.sql(e))?;
        let revoked = tx
            .execute(
                "UPDATE devices SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL",
                params![id.to_string(), now],
            )
            .map_err(|e| self.sql(e))?;
        tx.execute(
            "DELETE FROM web_sessions WHERE device_id = ?1",
            [id.to_string()],
        )
        .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(revoked == 1)
    }

    /// A device's name, revoked or not.
    pub fn device_name(&self, id: DeviceId) -> Result<Option<String>, StoreError> {
        self.lock()
            .query_row(
                "SELECT name FROM devices WHERE id = ?1",
                [id.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }
}

fn parse_device(id: &str) -> Result<DeviceId, StoreError> {
    id.parse().map_err(|e: uuid::Error| StoreError::Corrupt {
        row: format!("device {id}"),
        column: "id",
        reason: e.to_string(),
    })
}
