//! Stopping what a test or a benchmark started, and waiting for exits: on
//! the exit itself for a child, by looking at `/proc` for a process that is
//! not ours.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Why a process could not be started or signalled.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start {name}")]
    Spawn {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run kill")]
    RunKill(#[source] std::io::Error),
    /// `kill` ran and failed: most often, no such process.
    #[error("kill {signal} {pid} failed")]
    Kill { signal: &'static str, pid: u32 },
}

/// How long a process may take to exit after SIGTERM.
pub const EXIT_PATIENCE: Duration = Duration::from_secs(10);

/// Waits up to `patience` for `child` to exit and returns its status. When
/// it has not exited by then it is killed (SIGKILL) and `None` comes back:
/// every caller treats a child that outstays its time as a failure.
pub fn wait_or_kill(child: &mut Child, patience: Duration) -> Option<ExitStatus> {
    let pid = child.id();
    std::thread::scope(|scope| {
        let (exited_tx, exited) = std::sync::mpsc::channel();
        scope.spawn(move || {
            let _ = exited_tx.send(child.wait());
        });
        match exited.recv_timeout(patience) {
            Ok(Ok(status)) => Some(status),
            _ => {
                // The waiting thread returns once the child is gone.
                let _ = signal("-KILL", pid);
                None
            }
        }
    })
}

/// Sends SIGTERM to one process, by id.
pub fn terminate(pid: u32) -> Result<(), ProcessError> {
    signal("-TERM", pid)
}

fn signal(signal: &'static str, pid: u32) -> Result<(), ProcessError> {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .map_err(ProcessError::RunKill)?;
    if status.success() {
        Ok(())
    } else {
        Err(ProcessError::Kill { signal, pid })
    }
}

/// Waits up to `patience` until none of `pids` is running; whether they all
/// ended. They are not our children, so `wait` cannot report their exit;
/// a pidfd (Linux 5.3) becomes readable when its process exits, and `poll`
/// waits on it.
pub fn wait_gone(pids: &[u32], patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    pids.iter().all(|&pid| ended_by(pid, deadline))
}

/// Whether `pid` has ended by `deadline` (at once when it is gone already).
fn ended_by(pid: u32, deadline: Instant) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return true;
    };
    // No such process (ESRCH): it is gone.
    let Ok(pidfd) = pidfd_open(pid, PidfdFlags::empty()) else {
        return true;
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(timeout) = Timespec::try_from(left) else {
            return false;
        };
        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            // A signal cut the wait short: wait out the rest.
            Err(rustix::io::Errno::INTR) => continue,
            polled => return matches!(polled, Ok(n) if n > 0),
        }
    }
}

/// Whether process `pid` exists (a zombie still does).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A process we started, stopped with SIGTERM (SIGKILL if it lingers) when
/// asked or when dropped.
#[derive(Debug)]
pub struct Started {
    pub name: &'static str,
    pub child: Child,
}

impl Started {
    pub fn spawn(name: &'static str, command: &mut Command) -> Result<Started, ProcessError> {
        let child = command
            .spawn()
            .map_err(|source| ProcessError::Spawn { name, source })?;
        Ok(Started { name, child })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then waits for the exit; SIGKILL when it has not exited
    /// within [`EXIT_PATIENCE`]. The status, when it exited of its own
    /// accord (`None`: it was killed).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = terminate(self.child.id());
        wait_or_kill(&mut self.child, EXIT_PATIENCE)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The pid, here, of a process a fake agent logged as its identity
/// (`{"pid", "pid_ns", "start"}`: its pid in its own PID namespace, that
/// namespace, and its start in clock ticks since boot): a confined agent's
/// pid means another process out here. `None` once it is gone.
pub fn host_pid(identity: &serde_json::Value) -> Option<u32> {
    let inner = identity["pid"].as_u64()?;
    let ns = identity["pid_ns"].as_str()?;
    let start = identity["start"].as_u64()?;
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let dir = entry.path();
            if std::fs::read_link(dir.join("ns/pid")).ok()?.to_str()? != ns {
                return None;
            }
            let status = std::fs::read_to_string(dir.join("status")).ok()?;
            let innermost: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))?
                .split_whitespace()
                .last()?
                .parse()
                .ok()?;
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let started: u64 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(19)?
                .parse()
                .ok()?;
            (innermost == inner && started == start).then_some(pid)
        })
}

/// [`wait_gone`] for a process a fake agent logged as its identity (see
/// [`host_pid`]): true at once when it is not running.
pub fn wait_identity_gone(identity: &serde_json::Value, patience: Duration) -> bool {
    host_pid(identity).is_none_or(|pid| wait_gone(&[pid], patience))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_is_seen_and_an_overstay_is_killed() {
        let mut quick = Command::new("true").spawn().unwrap();
        assert!(wait_or_kill(&mut quick, Duration::from_secs(20)).is_some_and(|s| s.success()));
        let mut slow = Command::new("sleep").arg("30").spawn().unwrap();
        assert_eq!(wait_or_kill(&mut slow, Duration::from_millis(50)), None);
        assert!(slow.try_wait().unwrap().is_some(), "killed and reaped");
    }

    #[test]
    fn a_started_process_stops_on_sigterm() {
        let mut sleeper = Started::spawn("sleep", Command::new("sleep").arg("30")).unwrap();
        let pid = sleeper.id();
        assert!(alive(pid));
        let status = sleeper.stop().expect("it exits on SIGTERM");
        assert!(!status.success());
        assert!(wait_gone(&[pid], EXIT_PATIENCE));
    }
}
