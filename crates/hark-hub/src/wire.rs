//! What the hub holds, in two JetStream key-value buckets:
//!
//! - `hark_items`, key `<host>.<item id>`: the item as its host asked it
//!   ([`Posted`]), put by that host (a daemon, or an agent-only host).
//! - `hark_decisions`, keys `<host>.<item id>.operator` and
//!   `<host>.<item id>.asker`: the one settlement that won ([`Decided`]).
//!   Both are written with `Nats-Expected-Last-Subject-Sequence: 0` over
//!   the subject `$KV.hark_decisions.<host>.<item id>.*`, so the server takes the first of
//!   either and refuses every later one: one winner, decided by the server.
//!   A clustered server checks that header only when its stream leader
//!   proposes a write, and forgets what it had in flight when leadership
//!   changes (nats-server 2.15's `processClusteredInboundMsg`); an offer
//!   proposed before a quorum was lost can then be committed after a later
//!   one was taken. So the winner is the *earliest* put under those keys
//!   (its stream sequence), which is why the bucket keeps a few values a
//!   key, and every reader resolves a decision by reading that first put
//!   from the stream's leader, not by the value a key holds last.
//!   The two keys exist so the server's permissions can tell them apart:
//!   an agent's credential may write `.asker` (its own timeout) but never
//!   `.operator` (an answer).
//!
//! A decision read from `.asker` is only ever an unanswered outcome: an
//! agent's credential that wrote an answer there is read as a withdrawal.
//!
//! Every key starts with the asking host's name ([`host_token`]), so the
//! server's permissions can hold an agent host's credential to its own
//! items: it cannot rewrite another host's question, withdraw it, or post
//! one in another host's name ([`crate::credential`]). A reader takes an
//! item only when the host it names is the host of its key.

use hark_core::model::ids::ItemId;
use hark_core::model::item::{Item, Outcome, Remote};
use serde::{Deserialize, Serialize};

/// The bucket of items.
pub const ITEMS: &str = "hark_items";
/// The bucket of decisions.
pub const DECISIONS: &str = "hark_decisions";
/// How many values a decisions key keeps: the earliest must outlive the
/// later writes a leader change lets in.
pub const DECISION_HISTORY: i64 = 16;
/// The version of the records below.
pub const VERSION: u32 = 1;

/// An item as the hub carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Posted {
    pub v: u32,
    /// The host that asked (`[hub] host`): its clock times the item out.
    pub host: String,
    /// What asked there: a daemon (which parks and resumes), or an agent
    /// with no daemon (a CI job).
    pub origin: Origin,
    pub item: Item,
}

/// What put an item on the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Daemon,
    Agent,
}

/// Which side settled an item: its key in the decisions bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// An operator replied (answer, skip, verdict, cancel).
    Operator,
    /// The asking host ended it unanswered (its timeout, its agent gone).
    Asker,
}

/// Where an item is on the hub: its host's [`host_token`] and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub host: String,
    pub id: ItemId,
}

impl Place {
    /// The place of `host`'s item `id`.
    pub fn new(host: &str, id: ItemId) -> Place {
        Place {
            host: host_token(host),
            id,
        }
    }

    /// Its key in the items bucket.
    pub fn item_key(&self) -> String {
        format!("{}.{}", self.host, self.id)
    }

    /// The place an items key names.
    pub fn of_item_key(key: &str) -> Option<Place> {
        let (host, id) = key.split_once('.')?;
        Some(Place {
            host: host.to_owned(),
            id: ItemId(id.parse().ok()?),
        })
    }

    /// The subject both sides' decisions on it fall under.
    pub fn decisions(&self) -> String {
        format!("$KV.{DECISIONS}.{}.{}.*", self.host, self.id)
    }
}

/// `host` as one token of a key: keys allow `-/_=.a-zA-Z0-9` and a dot
/// ends a token, so every byte but `-`, `_` and ASCII letters and digits is
/// written `=XX` (hex): `build-7.ci` is `build-7=2eci`. One host, one
/// token, and no two hosts share one.
pub fn host_token(host: &str) -> String {
    let mut token = String::with_capacity(host.len());
    for byte in host.bytes() {
        match byte {
            b'-' | b'_' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => token.push(byte as char),
            _ => token.push_str(&format!("={byte:02x}")),
        }
    }
    token
}

impl Side {
    pub fn key(self, place: &Place) -> String {
        let side = match self {
            Side::Operator => "operator",
            Side::Asker => "asker",
        };
        format!("{}.{}.{side}", place.host, place.id)
    }

    /// The side and item a decisions key names.
    pub fn of_key(key: &str) -> Option<(Place, Side)> {
        let (item, side) = key.rsplit_once('.')?;
        let side = match side {
            "operator" => Side::Operator,
            "asker" => Side::Asker,
            _ => return None,
        };
        Some((Place::of_item_key(item)?, side))
    }
}

/// A settlement, as the hub records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    pub v: u32,
    pub outcome: Outcome,
    /// The operator who replied (`None` on the asker's side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Remote>,
    /// Unique to this offer, so its maker knows it when it reads it back
    /// (after a timeout whose outcome was unknown).
    pub nonce: String,
}

impl Decided {
    /// Reads a decision from `side`'s key: an asker's side carries no
    /// answer, whatever its writer put there.
    pub fn read(bytes: &[u8], side: Side) -> Option<Decided> {
        let mut decided: Decided = serde_json::from_slice(bytes).ok()?;
        if side == Side::Asker {
            decided.by = None;
            if !unanswered(&decided.outcome) {
                decided.outcome = Outcome::Cancelled {
                    reason: "the asking host withdrew it".into(),
                };
            }
        } else if decided.by.is_none() {
            decided.by = Some(Remote {
                operator: "an operator".into(),
                host: "the hub".into(),
                surface: None,
            });
        }
        Some(decided)
    }
}

/// An outcome an asker's side may record: no answer in it.
pub fn unanswered(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::TimedOut { .. } | Outcome::Cancelled { .. } | Outcome::NoOperator
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_host_item_and_side() {
        let id = ItemId(uuid_from(7));
        let place = Place::new("build-7.ci", id);
        assert_eq!(place.item_key(), format!("build-7=2eci.{id}"));
        assert_eq!(Place::of_item_key(&place.item_key()), Some(place.clone()));
        assert_eq!(
            Side::of_key(&Side::Operator.key(&place)),
            Some((place.clone(), Side::Operator))
        );
        assert_eq!(
            Side::of_key(&Side::Asker.key(&place)),
            Some((place.clone(), Side::Asker))
        );
        assert_eq!(Side::of_key(&format!("h.{id}.other")), None);
        assert_eq!(Side::of_key("h.not-an-id.operator"), None);
        assert_eq!(Side::of_key(&format!("{id}.operator")), None);
    }

    #[test]
    fn no_two_hosts_share_a_token_and_none_breaks_a_key() {
        let hosts = ["a.b", "a_b", "a=2eb", "a b", "a*", "a>", "é", "a/b"];
        let tokens: std::collections::HashSet<String> =
            hosts.iter().map(|h| host_token(h)).collect();
        assert_eq!(tokens.len(), hosts.len());
        for token in &tokens {
            assert!(
                token
                    .bytes()
                    .all(|b| b == b'=' || b == b'-' || b == b'_' || b.is_ascii_alphanumeric()),
                "{token}"
            );
        }
        assert_eq!(host_token("alice-laptop"), "alice-laptop");
    }

    #[test]
    fn an_answer_on_the_askers_side_reads_as_a_withdrawal() {
        let forged = serde_json::to_vec(&Decided {
            v: VERSION,
            outcome: Outcome::Denied,
            by: Some(Remote {
                operator: "mallory".into(),
                host: "ci".into(),
                surface: None,
            }),
            nonce: "n".into(),
        })
        .unwrap();
        let read = Decided::read(&forged, Side::Asker).unwrap();
        assert!(matches!(read.outcome, Outcome::Cancelled { .. }));
        assert_eq!(read.by, None);
        let timed_out = serde_json::to_vec(&Decided {
            v: VERSION,
            outcome: Outcome::TimedOut { after_ms: 5 },
            by: None,
            nonce: "n".into(),
        })
        .unwrap();
        assert_eq!(
            Decided::read(&timed_out, Side::Asker).unwrap().outcome,
            Outcome::TimedOut { after_ms: 5 }
        );
        assert_eq!(Decided::read(b"{not json", Side::Operator), None);
    }

    fn uuid_from(n: u8) -> uuid::Uuid {
        uuid::Uuid::from_bytes([n; 16])
    }
}
