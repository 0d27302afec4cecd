//! Waiting for a child process to exit, on its exit rather than by polling.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

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
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
                None
            }
        }
    })
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
}
