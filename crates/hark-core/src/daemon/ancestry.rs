//! Reading the process tree: a process's parent, its name, and when it
//! started, so the daemon can tell whether a peer runs inside an agent
//! ([`super::peers`]).
//!
//! The one platform seam of the check. On Linux it reads `/proc/<pid>/stat`;
//! on Windows it takes a process snapshot (Toolhelp) and the process's
//! creation time (a run's agent is told by its job instead, which a detached
//! helper cannot leave: [`super::peers`]); elsewhere (macOS and the BSDs) it asks `ps`, which tells
//! no start time, so a reused pid is not told apart there.

/// A process as the daemon saw it: its pid, and when it started (clock
/// ticks since boot, where the platform tells it), so that a pid reused by
/// a later process is not taken for the one the daemon saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub started: Option<u64>,
}

impl Process {
    /// Whether `other` is this process: the same pid, started at the same
    /// time (when both times are known).
    pub fn is(&self, other: &Process) -> bool {
        self.pid == other.pid
            && match (self.started, other.started) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// One process of an ancestry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub process: Process,
    /// Its parent's pid (0 above the first process).
    pub ppid: u32,
    /// Its name (`comm`), for the refusal's message.
    pub name: String,
}

/// Why a process's ancestry could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AncestryError {
    #[error("cannot read process {pid}: {source}")]
    Read { pid: u32, source: std::io::Error },
    #[error("cannot make sense of what the system says about process {pid}")]
    Malformed { pid: u32 },
    #[error("the ancestry of process {pid} kept changing while it was read")]
    Unsettled { pid: u32 },
}

/// How deep an ancestry may be before it is taken for a loop.
const MAX_DEPTH: usize = 4096;
/// How many times a walk is tried again when a parent exits under it.
const ATTEMPTS: usize = 3;

/// `pid` and its ancestors, itself first, up to the first process.
pub fn ancestry(pid: u32) -> Result<Vec<Step>, AncestryError> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        match walk(pid) {
            Ok(steps) => return Ok(steps),
            // A parent exited (or its pid was taken again) between two
            // reads: the child has a new parent by now; read again.
            Err(e @ (AncestryError::Read { .. } | AncestryError::Unsettled { .. })) => {
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(AncestryError::Unsettled { pid }))
}

/// Windows never reparents: an orphan keeps its parent's pid, which names a
/// process that is gone (or, reused, a younger one). There the walk ends at
/// the orphan, where on Linux such a parent is one exiting under the walk
/// (its child is about to be reparented), read again.
const ORPHANS_KEEP_THEIR_PARENT: bool = cfg!(windows);

fn walk(pid: u32) -> Result<Vec<Step>, AncestryError> {
    let mut steps: Vec<Step> = Vec::new();
    let mut next = pid;
    while next != 0 && steps.len() < MAX_DEPTH {
        let step = match platform::step(next) {
            Ok(step) => step,
            Err(AncestryError::Read { .. }) if ORPHANS_KEEP_THEIR_PARENT && !steps.is_empty() => {
                return Ok(steps);
            }
            Err(e) => return Err(e),
        };
        // A parent starts before its child: one that started later holds
        // a reused pid, and the real parent is gone.
        if let Some(child) = steps.last()
            && let (Some(parent), Some(born)) = (step.process.started, child.process.started)
            && parent > born
        {
            if ORPHANS_KEEP_THEIR_PARENT {
                return Ok(steps);
            }
            return Err(AncestryError::Unsettled {
                pid: child.process.pid,
            });
        }
        next = step.ppid;
        steps.push(step);
    }
    if next != 0 {
        return Err(AncestryError::Unsettled { pid });
    }
    Ok(steps)
}

/// `pid` as the system tells it now: its start time, parent and name.
pub fn step(pid: u32) -> Result<Step, AncestryError> {
    platform::step(pid)
}

#[cfg(target_os = "linux")]
mod platform {
    use super::{AncestryError, Step, parse_stat};

    pub fn step(pid: u32) -> Result<Step, AncestryError> {
        let raw = std::fs::read(format!("/proc/{pid}/stat"))
            .map_err(|source| AncestryError::Read { pid, source })?;
        parse_stat(pid, &String::from_utf8_lossy(&raw)).ok_or(AncestryError::Malformed { pid })
    }
}

#[cfg(windows)]
mod platform {
    use super::{AncestryError, Process, Step};

    /// The process snapshot's entry for `pid`.
    pub fn step(pid: u32) -> Result<Step, AncestryError> {
        let entry = crate::platform::process_entry(pid)
            .map_err(|source| AncestryError::Read { pid, source })?;
        Ok(Step {
            process: Process {
                pid,
                started: entry.created,
            },
            ppid: entry.ppid,
            name: entry.name,
        })
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod platform {
    use super::{AncestryError, Process, Step};

    /// `ps -o ppid= -o comm= -p PID`: the parent and the command.
    pub fn step(pid: u32) -> Result<Step, AncestryError> {
        let out = std::process::Command::new("ps")
            .args(["-o", "ppid=", "-o", "comm=", "-p"])
            .arg(pid.to_string())
            .output()
            .map_err(|source| AncestryError::Read { pid, source })?;
        if !out.status.success() {
            let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no such process");
            return Err(AncestryError::Read { pid, source });
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let (ppid, name) = text
            .trim()
            .split_once(char::is_whitespace)
            .ok_or(AncestryError::Malformed { pid })?;
        let ppid = ppid.parse().map_err(|_| AncestryError::Malformed { pid })?;
        Ok(Step {
            process: Process { pid, started: None },
            ppid,
            name: name.trim().to_owned(),
        })
    }
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid … starttime …`. The
/// name may hold spaces and parentheses of its own, so it runs to the
/// *last* `)`; the fields after it are counted from there.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_stat(pid: u32, text: &str) -> Option<Step> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    // starttime is the 22nd field: the 20th after the name.
    let started = fields.nth(17)?.parse().ok()?;
    Some(Step {
        process: Process {
            pid,
            started: Some(started),
        },
        ppid,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let text = "4242 (evil) 1 2 (x) S 77 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615";
        let step = parse_stat(4242, text).unwrap();
        assert_eq!(step.name, "evil) 1 2 (x");
        assert_eq!(step.ppid, 77);
        assert_eq!(step.process.started, Some(987_654));
    }

    #[test]
    fn a_cut_short_stat_is_not_read_as_anything() {
        assert_eq!(parse_stat(1, "1 (init) S 0 1 1"), None);
        assert_eq!(parse_stat(1, "1 init S 0"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_has_this_process_among_its_ancestors() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let steps = ancestry(child.id());
        let _ = child.kill();
        let _ = child.wait();
        let steps = steps.unwrap();
        assert_eq!(steps[0].process.pid, child.id());
        assert_eq!(steps[1].process, step(std::process::id()).unwrap().process);
        assert_eq!(steps.last().unwrap().ppid, 0);
    }

    #[test]
    fn a_reused_pid_is_not_the_process_seen_before() {
        let seen = Process {
            pid: 9,
            started: Some(100),
        };
        assert!(seen.is(&seen));
        assert!(!seen.is(&Process {
            pid: 9,
            started: Some(200)
        }));
        assert!(seen.is(&Process {
            pid: 9,
            started: None
        }));
    }
}
