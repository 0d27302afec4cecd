//! Deciding an item once, on the server: a settlement is published to its
//! side's key, guarded so that the server takes it only while neither
//! side's key has a value; then whatever the server holds is the winner.
//!
//! A publish whose acknowledgement does not come (the server restarting,
//! a cluster without its quorum) has an unknown outcome: it may have been
//! committed, and may still be. So it is never reported as failed from
//! the publish alone: the decision's keys are watched for the winner (a
//! decision in flight lands there), and only when none comes within the
//! request timeout is the offer left undecided (and the item pending).

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::Operation;
use bytes::Bytes;
use futures_util::StreamExt;
use hark_core::model::ids::ItemId;

use crate::wire::{DECISIONS, Decided, Side, decisions_of};
use crate::{Hub, HubError};

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
        match self.settled_within(id).await {
            Some(winner) => {
                let ours = winner.nonce == decided.nonce;
                Ok((winner, ours))
            }
            None => Err(HubError::Undecided(id)),
        }
    }

    /// The settlement of `id` as soon as the server has one, waited for on
    /// a watch of both sides' keys (a decision still in flight lands
    /// there), for one request timeout at most.
    async fn settled_within(&self, id: ItemId) -> Option<Decided> {
        let read = async {
            let mut watch = match self.decisions.watch_with_history(format!("{id}.*")).await {
                Ok(watch) => watch,
                Err(e) => {
                    tracing::debug!(question_id = %id, "cannot follow the decision: {e}");
                    return None;
                }
            };
            while let Some(entry) = watch.next().await {
                let Ok(entry) = entry else { continue };
                if entry.operation != Operation::Put {
                    continue;
                }
                let decided = Side::of_key(&entry.key)
                    .and_then(|(_, side)| Decided::read(&entry.value, side));
                if decided.is_some() {
                    return decided;
                }
            }
            None
        };
        tokio::time::timeout(self.options.timeout, read)
            .await
            .ok()
            .flatten()
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
