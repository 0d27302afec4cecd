//! The signals that stop `hark run`, and how every wait of the run
//! watches them.

use tokio::sync::watch;

/// The signals that tell `hark run` to stop: SIGTERM (a logout, a service
/// manager, `kill`) and SIGHUP (its terminal closed). Ctrl-C is the turn's
/// own business (it stops the agent and passes its status through). Every
/// wait of the run (an agent's turn, the operator's next message) watches
/// it, so the agent is stopped and reaped before the run ends.
#[derive(Debug, Clone)]
pub struct StopSignals(watch::Receiver<Option<Received>>);

/// A stop signal that arrived.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub name: &'static str,
    pub number: i32,
}

impl Received {
    /// The run's exit status when it stopped, as a shell reports a process
    /// this signal ended.
    pub fn exit_code(self) -> i32 {
        by_signal(self.number)
    }
}

/// The exit status a shell reports for a process signal `number` ended:
/// 128 + the signal, the one place it is computed.
pub const fn by_signal(number: i32) -> i32 {
    128 + number
}

impl StopSignals {
    /// Handles the signals from now on (instead of dying of them).
    pub(super) fn listen() -> StopSignals {
        let (arrived, seen) = watch::channel(None);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).ok();
            let mut hup = signal(SignalKind::hangup()).ok();
            first_of(
                arrived,
                (SIGTERM, async move { term.as_mut()?.recv().await }),
                (SIGHUP, async move { hup.as_mut()?.recv().await }),
            );
        }
        // Windows: its console closing, or Ctrl-Break, stands for them.
        #[cfg(windows)]
        {
            use tokio::signal::windows::{ctrl_break, ctrl_close};
            let mut close = ctrl_close().ok();
            let mut brk = ctrl_break().ok();
            first_of(
                arrived,
                (SIGHUP, async move { close.as_mut()?.recv().await }),
                (SIGTERM, async move { brk.as_mut()?.recv().await }),
            );
        }
        stop_with_parent();
        StopSignals(seen)
    }

    /// Completes when one has arrived (at once if one already has).
    pub async fn arrived(&mut self) -> Received {
        match self.0.wait_for(Option::is_some).await {
            Ok(received) => received.unwrap_or(Received {
                name: "a signal",
                number: 15,
            }),
            // The listener is gone (no signal can come): wait for ever.
            Err(_) => std::future::pending().await,
        }
    }
}

/// What a stop reports: on Windows a closed console stands for SIGHUP,
/// Ctrl-Break for SIGTERM.
const SIGTERM: Received = Received {
    name: "SIGTERM",
    number: 15,
};
const SIGHUP: Received = Received {
    name: "SIGHUP",
    number: 1,
};

/// Tells `arrived` whichever of the two signals comes first (a `None`
/// from one: it cannot be listened to).
fn first_of(
    arrived: watch::Sender<Option<Received>>,
    one: (Received, impl Future<Output = Option<()>> + Send + 'static),
    other: (Received, impl Future<Output = Option<()>> + Send + 'static),
) {
    tokio::spawn(async move {
        let received = tokio::select! {
            Some(()) = one.1 => one.0,
            Some(()) = other.1 => other.0,
            else => return,
        };
        let _ = arrived.send(Some(received));
    });
}

/// With `HARK_STOP_WITH_PARENT` set (the studio sets it), the parent's
/// death is a SIGTERM to this run (Linux's parent-death signal, which also
/// covers a parent killed outright), so the run stops its agent rather than
/// leave it running. Set after the handlers, so the signal is caught; a
/// parent already gone by then is told the same way.
#[cfg(target_os = "linux")]
fn stop_with_parent() {
    if std::env::var_os(hark_core::env::STOP_WITH_PARENT).is_none() {
        return;
    }
    {
        use rustix::process::{Signal, getppid, set_parent_process_death_signal};
        let parent = getppid();
        if set_parent_process_death_signal(Some(Signal::TERM)).is_err() {
            return;
        }
        // Reparented already: the parent died before the signal was set.
        if getppid() != parent || parent.is_none() {
            hark_core::platform::ask_to_end(std::process::id());
        }
    }
}

/// Elsewhere there is no parent-death signal: a run whose studio dies
/// outright goes on (not covered outside Linux).
#[cfg(not(target_os = "linux"))]
fn stop_with_parent() {}

/// Races `work` against a stop signal; `Err` is the signal.
pub(super) async fn unless_stopped<T>(
    stop: &mut StopSignals,
    work: impl std::future::Future<Output = T>,
) -> Result<T, Received> {
    tokio::select! {
        done = work => Ok(done),
        received = stop.arrived() => Err(received),
    }
}
