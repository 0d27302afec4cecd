//! The desktop the app runs on, all private to this run: a session bus
//! (`dbus-daemon`), a `dbus-monitor` watching the notification interface on
//! it, a notification server (`dunst`), and `hark-app` itself, started
//! directly (no WebDriver) with its JSON log followed. The X display is the
//! one `xvfb-run` provides.
//!
//! Everything is stopped by [`Desktop::stop`], or on drop when the run
//! fails half-way: the app with SIGTERM first, then dunst, the monitor and
//! the bus.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::clock::ms_between;
use crate::follow::{Event, Lines};
use crate::monitor;
use hark_bench::sandbox::Sandbox;

/// How long the app may take to start (WebKit under Xvfb, on a busy machine).
const START_PATIENCE: Duration = Duration::from_secs(60);
/// How long a helper (bus, monitor, dunst) may take to start.
const HELPER_PATIENCE: Duration = Duration::from_secs(15);
/// How long a process may take to exit after SIGTERM.
const EXIT_PATIENCE: Duration = Duration::from_secs(10);

/// The tools the desktop needs, besides the app.
pub const TOOLS: [&str; 4] = ["dbus-daemon", "dbus-monitor", "dunst", "getconf"];

/// A process this run started, stopped with SIGTERM (SIGKILL if it lingers).
#[derive(Debug)]
struct Started {
    name: &'static str,
    child: Child,
}

impl Started {
    fn spawn(name: &'static str, command: &mut Command) -> Result<Started, String> {
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Started { name, child })
    }

    /// SIGTERM, then waits for the exit; SIGKILL when it has not exited in
    /// time. The status, when it exited of its own accord.
    fn stop(&mut self) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = terminate(self.child.id());
        let status = hark_bench::child::wait_or_kill(&mut self.child, EXIT_PATIENCE);
        if status.is_none() {
            eprintln!(
                "hark-desktop-bench: {} ignored SIGTERM; it was killed",
                self.name
            );
        }
        status
    }
}

/// Sends SIGTERM to one process, by id.
pub fn terminate(pid: u32) -> Result<(), String> {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run kill: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -TERM {pid} failed"))
    }
}

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
    pub bus: String,
    /// `dbus-monitor`'s output.
    pub monitor: Lines,
    /// The app's stderr: JSON log lines, and whatever GTK and WebKit say.
    pub log: Lines,
    pub app_pid: u32,
    pub startup: Startup,
    app: Option<Started>,
    helpers: Vec<Started>,
}

impl Desktop {
    /// Starts the bus, the monitor, dunst and `app`, and waits until the app
    /// serves and has drawn its tray.
    pub fn start(sandbox: &Sandbox, app: &Path) -> Result<Desktop, String> {
        let mut helpers = Vec::new();
        let mut bus_daemon = Started::spawn(
            "dbus-daemon",
            sandbox
                .command("dbus-daemon", None)
                .args(["--session", "--nofork", "--print-address=1"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        let address = Lines::follow("dbus-daemon", take(bus_daemon.child.stdout.take())?);
        helpers.push(bus_daemon);
        // From here on, a failure drops `desktop`, which stops what started.
        let mut desktop = Desktop {
            bus: String::new(),
            monitor: Lines::follow("nothing", std::io::empty()),
            log: Lines::follow("nothing", std::io::empty()),
            app_pid: 0,
            startup: Startup {
                serving_ms: 0.0,
                tray_ms: 0.0,
            },
            app: None,
            helpers,
        };
        desktop.bus = address.wait("bus address", HELPER_PATIENCE, |lines| {
            lines
                .iter()
                .find(|l| l.text.starts_with("unix:"))
                .map(|l| l.text.trim().to_owned())
        })?;
        let bus = desktop.bus.clone();

        let mut monitor = Started::spawn(
            "dbus-monitor",
            sandbox
                .command("dbus-monitor", Some(&bus))
                .args([
                    "--address",
                    &bus,
                    "interface='org.freedesktop.Notifications'",
                    "interface='org.freedesktop.DBus',member='NameOwnerChanged'",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        desktop.monitor = Lines::follow("dbus-monitor", take(monitor.child.stdout.take())?);
        desktop.helpers.push(monitor);
        desktop
            .monitor
            .wait("dbus-monitor attaching", HELPER_PATIENCE, |lines| {
                lines
                    .iter()
                    .find(|l| l.text.starts_with("signal "))
                    .map(|_| ())
            })?;

        let dunst = Started::spawn(
            "dunst",
            sandbox
                .command("dunst", Some(&bus))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        desktop.helpers.push(dunst);
        desktop.monitor.wait(
            "dunst owning org.freedesktop.Notifications",
            HELPER_PATIENCE,
            |lines| monitor::name_owned(lines, "org.freedesktop.Notifications").then_some(()),
        )?;

        let spawned = SystemTime::now();
        let mut app = Started::spawn(
            "hark-app",
            sandbox
                .command(app, Some(&bus))
                .env("HARK_LOG_FORMAT", "json")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )?;
        desktop.app_pid = app.child.id();
        desktop.log = Lines::follow("hark-app's log", take(app.child.stderr.take())?);
        desktop.app = Some(app);
        let serving =
            desktop
                .log
                .wait_event(0, "hark is serving the operator", START_PATIENCE, |_| true)?;
        let tray = desktop
            .log
            .wait_event(serving.index, "tray.updated", START_PATIENCE, |_| true)?;
        desktop.startup = Startup {
            serving_ms: ms_between(spawned, serving.at()),
            tray_ms: ms_between(spawned, tray.at()),
        };
        Ok(desktop)
    }

    /// Waits for a log event from index `from` on.
    pub fn event(
        &self,
        from: usize,
        message: &str,
        patience: Duration,
        matches: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<Event, String> {
        self.log.wait_event(from, message, patience, matches)
    }

    /// Stops the app (SIGTERM), then whatever of its tree outlives it, then
    /// dunst, the monitor and the bus.
    pub fn stop(&mut self) -> Shutdown {
        let mut shutdown = Shutdown {
            app_status: None,
            leftovers: Vec::new(),
        };
        if let Some(mut app) = self.app.take() {
            let tree = crate::procs::tree(app.child.id());
            let names: Vec<(u32, String)> = tree[1..]
                .iter()
                .map(|&pid| (pid, crate::procs::name(pid)))
                .collect();
            shutdown.app_status = app.stop().map(|s| s.to_string());
            // WebKit's helpers exit when the app's end of their socket closes.
            // They are not our children, so nothing reports their exit to us
            // (short of pidfd_open): look at /proc until they are gone.
            let deadline = Instant::now() + EXIT_PATIENCE;
            let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();
            while names.iter().any(|(pid, _)| alive(*pid)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            for (pid, name) in names {
                if alive(pid) && crate::procs::name(pid) == name {
                    let _ = terminate(pid);
                    shutdown.leftovers.push(format!("{name} ({pid})"));
                }
            }
        }
        while let Some(mut helper) = self.helpers.pop() {
            helper.stop();
        }
        shutdown
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        self.stop();
    }
}

fn take<T>(pipe: Option<T>) -> Result<T, String> {
    pipe.ok_or_else(|| "a child's pipe is missing".to_owned())
}
