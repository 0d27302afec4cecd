//! The ids that name things across the socket and the store, and where new
//! ids and the wall clock come from.
//!
//! Each id is a newtype, so an item id cannot be passed where a run id is
//! meant; each serializes as its bare string.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An item's id: a random UUID, so it cannot be guessed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ItemId(pub Uuid);

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A dispatched run's id (`hark run`, a run the daemon started): a UUID.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunId(pub Uuid);

impl RunId {
    /// The first eight characters, as the terminal and the log show it.
    pub fn short(&self) -> String {
        self.0.simple().to_string()[..8].to_owned()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for RunId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<RunId, uuid::Error> {
        Uuid::parse_str(s).map(RunId)
    }
}

/// A paired web device's id (see [`crate::pairing`]): a random UUID.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeviceId(pub Uuid);

impl DeviceId {
    pub fn random() -> DeviceId {
        DeviceId(Uuid::new_v4())
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for DeviceId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<DeviceId, uuid::Error> {
        Uuid::parse_str(s).map(DeviceId)
    }
}

/// The agent session items are filed under: `HARK_SESSION_ID`, a run's
/// `--session`, or one per MCP server. Any non-empty text.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionId(String);

impl SessionId {
    /// The session of an asker that named none.
    pub fn unnamed() -> SessionId {
        SessionId("unnamed".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> SessionId {
        SessionId(id)
    }
}

impl From<&str> for SessionId {
    fn from(id: &str) -> SessionId {
        SessionId(id.to_owned())
    }
}

impl PartialEq<&str> for SessionId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where new ids come from: random UUIDs in the product, a counted
/// sequence in a test (so its ids are known in advance).
#[derive(Clone)]
pub struct Ids(Arc<dyn Fn() -> Uuid + Send + Sync>);

impl Ids {
    /// Random (v4) UUIDs: ids nobody can guess.
    pub fn random() -> Ids {
        Ids(Arc::new(Uuid::new_v4))
    }

    /// 00000000-…-0001, then …-0002, and so on.
    pub fn sequence() -> Ids {
        let next = AtomicU64::new(0);
        Ids(Arc::new(move || {
            Uuid::from_u128(u128::from(next.fetch_add(1, Ordering::Relaxed) + 1))
        }))
    }

    pub fn item(&self) -> ItemId {
        ItemId((self.0)())
    }

    pub fn run(&self) -> RunId {
        RunId((self.0)())
    }
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::random()
    }
}

impl fmt::Debug for Ids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Ids")
    }
}

/// The wall clock items are stamped with: the system's in the product, a
/// test's own otherwise. (Deadlines run on tokio's clock, which tests pause.)
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    pub fn system() -> Clock {
        Clock(Arc::new(SystemTime::now))
    }

    /// A clock that reads `at`, then a millisecond later at every reading.
    pub fn ticking_from(at: SystemTime) -> Clock {
        let readings = AtomicU64::new(0);
        Clock(Arc::new(move || {
            at + Duration::from_millis(readings.fetch_add(1, Ordering::Relaxed))
        }))
    }

    pub fn now(&self) -> SystemTime {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_their_bare_text() {
        let run = Ids::sequence().run();
        assert_eq!(
            serde_json::to_value(run).unwrap(),
            "00000000-0000-0000-0000-000000000001"
        );
        assert_eq!(run.short(), "00000000");
        assert_eq!(serde_json::to_value(SessionId::from("s-1")).unwrap(), "s-1");
        assert_eq!(
            "00000000-0000-0000-0000-000000000001"
                .parse::<RunId>()
                .unwrap(),
            run
        );
        assert!("not-a-run".parse::<RunId>().is_err());
    }

    #[test]
    fn a_test_clock_ticks_from_where_it_was_set() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let clock = Clock::ticking_from(start);
        assert_eq!(clock.now(), start);
        assert_eq!(clock.now(), start + Duration::from_millis(1));
    }
}
