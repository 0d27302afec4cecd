//! How a fake agent names its process so that the tests find it from
//! outside, and the ids it makes unique with it.

use serde_json::{Value, json};

/// A process as the tests can find it from outside a confinement's PID
/// namespace: its pid there, the namespace, and its start (clock ticks
/// since boot, the same inside and out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub pid: u32,
    pub pid_ns: String,
    pub start: u64,
}

impl Identity {
    /// Process `pid`'s; what `/proc` does not say is left empty (0).
    pub fn of(pid: u32) -> Self {
        let pid_ns = std::fs::read_link(format!("/proc/{pid}/ns/pid"))
            .map(|l| l.display().to_string())
            .unwrap_or_default();
        let start = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let after = s.rsplit_once(')')?.1.to_owned();
                after.split_whitespace().nth(19)?.parse::<u64>().ok()
            })
            .unwrap_or_default();
        Self { pid, pid_ns, start }
    }

    /// This process's. Its pid and start make an id unique on this
    /// machine even where every agent is pid 2 of its own PID namespace
    /// (confined by hark).
    pub fn me() -> Self {
        Self::of(std::process::id())
    }

    /// As the logs record it: `{"pid","pid_ns","start"}`.
    pub fn to_json(&self) -> Value {
        json!({"pid": self.pid, "pid_ns": self.pid_ns, "start": self.start})
    }
}

/// Process `pid` as the logs record it (see [`Identity`]).
pub fn identity(pid: u32) -> Value {
    Identity::of(pid).to_json()
}
