//! Deciding an item once, on the server: a settlement is published to its
//! side's key, guarded so that the server takes it only while neither
//! side's key has a value; then whatever the server holds is the winner.
//!
//! A publish whose acknowledgement does not come (the server restarting,
//! a cluster without its quorum) has an unknown outcome: it may have been
//! committed, and may still be. So it is never reported as failed from
//! the publish alone: the winner is read back, and only when no winner can
//! be read is the offer left undecided (and the item pending).

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::Operation;
use bytes::Bytes;
use hark_core::model::ids::ItemId;

use crate::wire::{DECISIONS, Decided, Side, decisions_of};
use crate::{Hub, HubError};

/// How often an unknown outcome is read back before it is left undecided.
const READ_BACK: u32 = 3;

impl Hub {
    /// Offers `decided` for `id` on `side`: returns the winner, and whether
    /// it is this offer.
    pub async fn decide(
        &self,
        id: ItemId,
        side: Side,
        decided: &Decided,
    ) -> Result<(Decided, bool), HubError> {
        let payload = Bytes::from(serde_json::to_vec(decided).map_err(HubError::Encode)?);
        let subject = format!("$KV.{DECISIONS}.{}", side.key(id));
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Expected-Last-Subject-Sequence", "0");
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence-Subject",
            decisions_of(id).as_str(),
        );
        let published = match self
            .js
            .publish_with_headers(subject, headers, payload)
            .await
        {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match published {
            Ok(_) => return Ok((decided.clone(), true)),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {}
            Err(e) => {
                tracing::warn!(question_id = %id, "the hub did not confirm a decision: {e}; reading it back")
            }
        }
        for attempt in 0..READ_BACK {
            match self.winner(id).await {
                Ok(Some(winner)) => {
                    let ours = winner.nonce == decided.nonce;
                    return Ok((winner, ours));
                }
                Ok(None) if attempt + 1 == READ_BACK => break,
                Ok(None) => {}
                Err(e) => tracing::debug!(question_id = %id, "reading the decision back: {e}"),
            }
            // Between two reads of an unknown outcome: the server may
            // still be electing a leader.
            tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
        }
        Err(HubError::Undecided(id))
    }

    /// The settlement the server holds for `id`, if any: the earlier of the
    /// two sides, should both ever hold one.
    pub async fn winner(&self, id: ItemId) -> Result<Option<Decided>, HubError> {
        let mut best: Option<(u64, Decided)> = None;
        for side in [Side::Operator, Side::Asker] {
            let entry = self
                .decisions
                .entry(side.key(id))
                .await
                .map_err(|e| HubError::Read(e.to_string()))?;
            let Some(entry) = entry else { continue };
            if entry.operation != Operation::Put {
                continue;
            }
            let Some(decided) = Decided::read(&entry.value, side) else {
                continue;
            };
            if best.as_ref().is_none_or(|(rev, _)| entry.revision < *rev) {
                best = Some((entry.revision, decided));
            }
        }
        Ok(best.map(|(_, decided)| decided))
    }
}
