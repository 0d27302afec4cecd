//! The desktop the app runs on, all private to this run: the harness's
//! [`Session`] (a session bus, a `dbus-monitor` watching the notification
//! interface on it, and `dunst`), and `hark-app` itself, started directly
//! (no WebDriver) with its JSON log followed. The X display is the one
//! `xvfb-run` provides.
//!
//! Everything is stopped by [`Desktop::stop`], or on drop when the run
//! fails half-way: the app with SIGTERM first, then dunst, the monitor and
//! the bus.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use hark_harness::clock::ms_between;
use hark_harness::process::{self, EXIT_PATIENCE, ProcessError, Started};
use hark_harness::{DesktopError, Event, Lines, Sandbox, Session, WaitError};

/// Why the desktop did not come up.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Session(#[from] DesktopError),
    #[error(transparent)]
    App(#[from] ProcessError),
    #[error("hark-app has no stderr pipe")]
    NoStderr,
    #[error("cannot write the app's config: {0}")]
    Config(std::io::Error),
    /// It never served, or never drew its tray: the wait has its last lines.
    #[error(transparent)]
    NotReady(#[from] WaitError),
}

/// How long the app keeps its hidden window once nothing waits, in this run.
pub const RELEASE_SECS: u64 = 5;

/// How long the app may take to start (WebKit under Xvfb, on a busy machine).
const START_PATIENCE: Duration = Duration::from_secs(60);

/// The tools the desktop needs, besides the app and the session's.
pub const TOOLS: [&str; 1] = ["getconf"];

/// How the app came up.
#[derive(Debug, Clone, Copy)]
pub struct Startup {
    /// Spawn → `hark is serving the operator`.
    pub serving_ms: f64,
    /// Spawn → the first `tray.updated`.
    pub tray_ms: f64,
}

/// How the app went down.
#[derive(Debug, Clone)]
pub struct Shutdown {
    /// It exited on SIGTERM (rather than being killed), with this status.
    pub app_status: Option<String>,
    /// Processes of its tree still alive after it exited, which had to be
    /// sent SIGTERM themselves.
    pub leftovers: Vec<String>,
}

/// The running desktop.
#[derive(Debug)]
pub struct Desktop {
    /// The bus, its monitor (what crossed to the notification server) and dunst.
    pub session: Session,
    /// The app's stderr: JSON log lines, and whatever GTK and WebKit say.
    pub log: Lines,
    pub app_pid: u32,
    pub startup: Startup,
    app: Option<Started>,
}

impl Desktop {
    /// Starts the session and `app`, and waits until the app serves and
    /// has drawn its tray.
    pub fn start(sandbox: &Sandbox, app: &Path) -> Result<Desktop, StartError> {
        // The window is released 5 s after nothing waits (30 s by default),
        // so the idle footprint is measured within the run's patience; the
        // latency asks follow each other well within it.
        std::fs::write(
            sandbox.config(),
            format!("window_release_secs = {RELEASE_SECS}\n"),
        )
        .map_err(StartError::Config)?;
        let session = Session::start(sandbox)?;
        let spawned = SystemTime::now();
        let mut app = Started::spawn(
            "hark-app",
            session
                .sandbox
                .command(app)
                .env("HARK_LOG_FORMAT", "json")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )?;
        let stderr = app.child.stderr.take().ok_or(StartError::NoStderr)?;
        // From here on, a failure drops `desktop`, which stops what started.
        let mut desktop = Desktop {
            session,
            log: Lines::follow("hark-app's log", stderr),
            app_pid: app.id(),
            startup: Startup {
                serving_ms: 0.0,
                tray_ms: 0.0,
            },
            app: Some(app),
        };
        let serving = desktop.log.wait_event_from(
            0,
            "hark is serving the operator",
            START_PATIENCE,
            |_| true,
        )?;
        let tray =
            desktop
                .log
                .wait_event_from(serving.index, "tray.updated", START_PATIENCE, |_| true)?;
        desktop.startup = Startup {
            serving_ms: ms_between(spawned, serving.at()),
            tray_ms: ms_between(spawned, tray.at()),
        };
        Ok(desktop)
    }

    /// What runs on this desktop starts from here (the sandbox, on its bus).
    pub fn sandbox(&self) -> &Sandbox {
        &self.session.sandbox
    }

    /// `dbus-monitor`'s output.
    pub fn monitor(&self) -> &Lines {
        &self.session.monitor
    }

    /// Waits for a log event from index `from` on.
    pub fn event(
        &self,
        from: usize,
        message: &str,
        patience: Duration,
        matches: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<Event, WaitError> {
        self.log.wait_event_from(from, message, patience, matches)
    }

    /// Stops the app (SIGTERM), then whatever of its tree outlives it, then
    /// dunst, the monitor and the bus.
    pub fn stop(&mut self) -> Shutdown {
        let mut shutdown = Shutdown {
            app_status: None,
            leftovers: Vec::new(),
        };
        if let Some(mut app) = self.app.take() {
            let tree = crate::procs::tree(app.id());
            let names: Vec<(u32, String)> = tree[1..]
                .iter()
                .map(|&pid| (pid, crate::procs::name(pid)))
                .collect();
            shutdown.app_status = app.stop().map(|s| s.to_string());
            if shutdown.app_status.is_none() {
                eprintln!("hark-desktop-bench: hark-app ignored SIGTERM; it was killed");
            }
            // WebKit's helpers exit when the app's end of their socket closes.
            let pids: Vec<u32> = names.iter().map(|(pid, _)| *pid).collect();
            process::wait_gone(&pids, EXIT_PATIENCE);
            for (pid, name) in names {
                if process::alive(pid) && crate::procs::name(pid) == name {
                    let _ = process::terminate(pid);
                    shutdown.leftovers.push(format!("{name} ({pid})"));
                }
            }
        }
        for name in self.session.stop() {
            eprintln!("hark-desktop-bench: {name} ignored SIGTERM; it was killed");
        }
        shutdown
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        self.stop();
    }
}
