//! Reading the buckets so that the server's permissions can scope what is
//! read: every read is a consumer whose filter is in the request's
//! subject (`$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>`), which the
//! server checks against the body's filter and a key's publish
//! permissions check against its host. An agent host's key may create
//! only consumers on its own host's decisions ([`crate::credential`]):
//! what it cannot name in a subject it cannot read.
//!
//! async-nats's own watch creates its consumer without a name, the filter
//! in the body only, where no permission can see it; these consumers are
//! named from the start.

use async_nats::jetstream::consumer::{DeliverPolicy, ReplayPolicy, push};
use async_nats::jetstream::kv::{self, Entry, Operation};
use async_nats::jetstream::{self, Message};
use futures_util::{Stream, StreamExt};

use crate::HubError;

/// The values put under `keys` (a key or a key pattern) of `bucket`, as an ordered push consumer delivers them: from each key's
/// current value on (`LastPerSubject`), or from the first kept (`All`);
/// and how many it had to deliver when it was made (0: none yet).
pub async fn watch(
    js: &jetstream::Context,
    bucket: &kv::Store,
    keys: &str,
    from: DeliverPolicy,
) -> Result<(u64, impl Stream<Item = Result<Entry, HubError>> + use<>), HubError> {
    let prefix = bucket.prefix.clone();
    let consumer = bucket
        .stream
        .create_consumer(push::OrderedConfig {
            // A name puts the filter in the request's subject.
            name: Some(uuid::Uuid::new_v4().simple().to_string()),
            deliver_subject: js.client().new_inbox(),
            description: Some("hark".to_owned()),
            filter_subject: format!("{prefix}{keys}"),
            replay_policy: ReplayPolicy::Instant,
            deliver_policy: from,
            ..Default::default()
        })
        .await
        .map_err(|e| HubError::Read(e.to_string()))?;
    let kept = consumer.cached_info().num_pending;
    let mut seen_current = kept == 0;
    let bucket = bucket.name.clone();
    let messages = consumer
        .messages()
        .await
        .map_err(|e| HubError::Read(e.to_string()))?;
    let entries = messages.map(move |message| {
        let message = message.map_err(|e| HubError::Read(e.to_string()))?;
        let entry = entry(&message, &prefix, &bucket, seen_current)?;
        seen_current |= entry.seen_current;
        Ok(entry)
    });
    Ok((kept, entries))
}

/// A delivered message as the bucket's entry.
fn entry(message: &Message, prefix: &str, bucket: &str, seen: bool) -> Result<Entry, HubError> {
    let info = message.info().map_err(|e| HubError::Read(e.to_string()))?;
    let operation = match message
        .headers
        .as_ref()
        .and_then(|h| h.get("KV-Operation"))
        .map(|op| op.as_str())
    {
        Some("DEL") => Operation::Delete,
        Some("PURGE") => Operation::Purge,
        _ => Operation::Put,
    };
    Ok(Entry {
        bucket: bucket.to_owned(),
        key: message
            .subject
            .strip_prefix(prefix)
            .unwrap_or(&message.subject)
            .to_owned(),
        value: message.payload.clone(),
        revision: info.stream_sequence,
        created: info.published,
        delta: info.pending,
        operation,
        seen_current: seen || info.pending == 0,
    })
}
