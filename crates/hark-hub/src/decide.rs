//! Deciding an item once, on the server: a settlement is published to its
//! side's key, guarded so that the server takes it only while neither
//! side's key has a value; then the earliest put under those keys is the
//! winner, whatever a key holds last (see [`crate::wire`] for why).
//!
//! A publish whose acknowledgement does not come (the server restarting,
//! a cluster without its quorum) has an unknown outcome: it may have been
//! committed, and may still be. So it is never reported as failed from
//! the publish alone: the decision's keys are watched for the winner (a
//! decision in flight lands there), and only when none comes within the
//! request timeout is the offer left undecided (and the item pending).

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::{Operation, Watch};
use async_nats::jetstream::stream::RawMessageErrorKind;
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
            // Taken; but an offer a former leader proposed may have been
            // committed before it (see [`crate::wire`]): read who won.
            Ok(_) => match self.winner(id).await {
                Ok(Some(winner)) => return Ok(Self::against(winner, decided)),
                Ok(None) => {
                    tracing::warn!(question_id = %id, "the hub took a decision it does not show yet; waiting for it")
                }
                Err(e) => {
                    tracing::warn!(question_id = %id, "cannot read back a decision the hub took: {e}")
                }
            },
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {}
            Err(e) => {
                tracing::warn!(question_id = %id, "the hub did not confirm a decision: {e}; reading it back")
            }
        }
        match self.settled_within(id).await {
            Some(winner) => Ok(Self::against(winner, decided)),
            None => Err(HubError::Undecided(id)),
        }
    }

    /// The winner, and whether it is `offered`.
    fn against(winner: Decided, offered: &Decided) -> (Decided, bool) {
        let ours = winner.nonce == offered.nonce;
        (winner, ours)
    }

    /// The settlement of `id` as soon as the server has one, waited for on
    /// a watch of both sides' keys (a decision still in flight lands
    /// there), for one request timeout at most. A cluster coming back
    /// refuses watches for a while ("temporarily unavailable") while its
    /// decision is still in flight: the read and the watch are tried
    /// again within that timeout, not given up at once.
    async fn settled_within(&self, id: ItemId) -> Option<Decided> {
        let read = async {
            let mut pause = Duration::from_millis(50);
            loop {
                if let Ok(Some(winner)) = self.winner(id).await {
                    return winner;
                }
                match self.decisions.watch_with_history(format!("{id}.*")).await {
                    Ok(watch) => {
                        if let Some(winner) = self.first_seen(id, watch).await {
                            return winner;
                        }
                    }
                    Err(e) => {
                        tracing::debug!(question_id = %id, "cannot follow the decision yet: {e}")
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        };
        tokio::time::timeout(self.options.timeout, read).await.ok()
    }

    /// The winner once `watch` shows a put. Each put is a sign, not the
    /// answer: the winner is the earliest, which a watch begun late may
    /// not show.
    async fn first_seen(&self, id: ItemId, mut watch: Watch) -> Option<Decided> {
        while let Some(entry) = watch.next().await {
            if !matches!(entry, Ok(ref e) if e.operation == Operation::Put) {
                continue;
            }
            match self.winner(id).await {
                Ok(Some(winner)) => return Some(winner),
                Ok(None) => {}
                Err(e) => tracing::debug!(question_id = %id, "cannot read the decision: {e}"),
            }
        }
        None
    }

    /// The settlement the server took for `id`, if any: the earliest put
    /// under either side's key, read from the stream's leader (a replica
    /// may lag behind a decision its leader acknowledged).
    pub async fn winner(&self, id: ItemId) -> Result<Option<Decided>, HubError> {
        let subject = decisions_of(id);
        let mut from = 1;
        loop {
            let message = match self
                .decisions
                .stream
                .get_first_raw_message_by_subject(&subject, from)
                .await
            {
                Ok(message) => message,
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => return Ok(None),
                Err(e) => return Err(HubError::Read(e.to_string())),
            };
            from = message.sequence + 1;
            let put = message
                .headers
                .get("KV-Operation")
                .is_none_or(|op| op.as_str() == "PUT");
            let side = message
                .subject
                .strip_prefix(&format!("$KV.{DECISIONS}."))
                .and_then(Side::of_key);
            if let (true, Some((_, side))) = (put, side)
                && let Some(decided) = Decided::read(&message.payload, side)
            {
                return Ok(Some(decided));
            }
        }
    }
}
