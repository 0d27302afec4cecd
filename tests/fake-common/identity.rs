//! What both fake agents share, included by each (`#[path]`): how a fake
//! agent names its process so that the tests find it from outside.

use serde_json::{Value, json};

/// This process as the tests can find it from outside a confinement's PID
/// namespace: its pid there, the namespace, and its start (clock ticks
/// since boot, the same inside and out).
pub fn identity(pid: u32) -> Value {
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .map(|l| l.display().to_string())
        .unwrap_or_default();
    let start = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1.to_owned();
            after.split_whitespace().nth(19)?.parse::<u64>().ok()
        })
        .unwrap_or_default();
    json!({"pid": pid, "pid_ns": ns, "start": start})
}
