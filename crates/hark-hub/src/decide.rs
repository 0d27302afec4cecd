//! Deciding an item once, on the server: a settlement is published to its
//! side's key, guarded so that the server takes it only while neither
//! side's key has a value; then the earliest put under those keys is the
//! winner, whatever a key holds last (see [`crate::wire`] for why).
//!
//! A publish whose acknowledgement does not come (the server restarting,
//! a cluster without its quorum) has an unknown outcome: it may have been
//! committed, and may still be. So it is never reported as failed from
//! the publish alone: the winner is read again each time this hub's
//! followers see a decision put for the item (a decision in flight lands
//! there), and only when none comes within the request timeout is the
//! offer left undecided (and the item pending).

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::stream::RawMessageErrorKind;
use bytes::Bytes;
use hark_core::model::ids::ItemId;
use tokio::sync::broadcast::error::RecvError;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::kv::Operation;
use futures_util::StreamExt;

use crate::wire::{DECISIONS, Decided, Place, Side};
use crate::{Hub, HubError, Role, read};

impl Hub {
    /// Offers `decided` for the item at `place` on `side`: returns the
    /// winner, and whether it is this offer.
    pub async fn decide(
        &self,
        place: &Place,
        side: Side,
        decided: &Decided,
    ) -> Result<(Decided, bool), HubError> {
        let payload = Bytes::from(serde_json::to_vec(decided).map_err(HubError::Encode)?);
        let id = place.id;
        let subject = format!("$KV.{DECISIONS}.{}", side.key(place));
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Expected-Last-Subject-Sequence", "0");
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence-Subject",
            place.decisions().as_str(),
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
            Ok(_) => match self.winner(place).await {
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
        match self.settled_within(place).await {
            Some(winner) => Ok(Self::against(winner, decided)),
            None => Err(HubError::Undecided(id)),
        }
    }

    /// The winner, and whether it is `offered`.
    fn against(winner: Decided, offered: &Decided) -> (Decided, bool) {
        let ours = winner.nonce == offered.nonce;
        (winner, ours)
    }

    /// The settlement of `id` as soon as the server has one, for one
    /// request timeout at most: read from the leader now, and again each
    /// time a follower of this hub (a daemon's, or an agent host's for the
    /// item it waits on) sees a decision put for it — a decision still in
    /// flight lands there. Without a follower the wait ends with the
    /// timeout, the item undecided.
    async fn settled_within(&self, place: &Place) -> Option<Decided> {
        let id = place.id;
        let mut seen = self.decided.subscribe();
        let read = async {
            loop {
                match self.winner(place).await {
                    Ok(Some(winner)) => return winner,
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(question_id = %id, "cannot read the decision yet: {e}")
                    }
                }
                loop {
                    match seen.recv().await {
                        Ok(decided) if decided == id => break,
                        Ok(_) => {}
                        Err(RecvError::Lagged(_)) => break,
                        Err(RecvError::Closed) => std::future::pending::<()>().await,
                    }
                }
            }
        };
        tokio::time::timeout(self.options.timeout, read).await.ok()
    }

    /// Tells the replies waiting on `id` that a decision put for it was
    /// seen.
    pub(crate) fn saw_decision(&self, id: ItemId) {
        let _ = self.decided.send(id);
    }

    /// The settlement the server took for the item at `place`, if any: the
    /// earliest put under either side's key. An operator's daemon reads it
    /// from the stream's leader (a replica may lag behind a decision its
    /// leader acknowledged); an agent host, whose key may not ask for a
    /// message by a subject in a request's body, through a consumer of the
    /// item's decisions from the first (see [`crate::read`]): a lagging
    /// replica shows it later, never another one first, and the follower
    /// waiting on the item reads again when it lands.
    pub async fn winner(&self, place: &Place) -> Result<Option<Decided>, HubError> {
        match self.options.role {
            Role::Operator => self.winner_from_leader(place).await,
            Role::Agent => self.winner_from_consumer(place).await,
        }
    }

    async fn winner_from_consumer(&self, place: &Place) -> Result<Option<Decided>, HubError> {
        let keys = format!("{}.*", place.item_key());
        let (kept, entries) =
            read::watch(&self.js, &self.decisions, &keys, DeliverPolicy::All).await?;
        if kept == 0 {
            return Ok(None);
        }
        let mut entries = std::pin::pin!(entries);
        loop {
            let entry = match tokio::time::timeout(self.options.timeout, entries.next()).await {
                Ok(Some(entry)) => entry?,
                Ok(None) => return Ok(None),
                Err(_) => return Err(HubError::Read("the item's decisions did not come".into())),
            };
            if entry.operation == Operation::Put
                && let Some((_, side)) = Side::of_key(&entry.key)
                && let Some(decided) = Decided::read(&entry.value, side)
            {
                return Ok(Some(decided));
            }
            if entry.delta == 0 {
                return Ok(None);
            }
        }
    }

    async fn winner_from_leader(&self, place: &Place) -> Result<Option<Decided>, HubError> {
        let subject = place.decisions();
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
