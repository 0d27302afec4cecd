//! A private desktop session, on the X display `xvfb-run` provides: a
//! session bus (`dbus-daemon`), a `dbus-monitor` watching the notification
//! interface and the bus's name changes, a notification server (`dunst`),
//! and, for a test that clicks the tray, a tray host (`trayer`). A test
//! clicks a notification's button through dunst itself
//! ([`Session::choose_action`]), so the click comes from the notification
//! server, as the operator's would. The app
//! under test is started on it by its user (directly by the desktop
//! benchmark, through WebDriver by the desktop tests), so it never meets the
//! user's session or an already-running instance.
//!
//! Everything is stopped with SIGTERM (SIGKILL if it lingers) when dropped,
//! last started first.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::lines::{Lines, WaitError};
use crate::monitor;
use crate::process::{ProcessError, Started};
use crate::sandbox::Sandbox;

/// Why the session or the tray host did not come up.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    #[error(transparent)]
    Start(#[from] ProcessError),
    #[error("{name} has no {pipe} pipe")]
    NoPipe {
        name: &'static str,
        pipe: &'static str,
    },
    /// The bus printed no address, or the monitor never attached.
    #[error(transparent)]
    Wait(#[from] WaitError),
    /// Every dunst started failed to serve in time; what each said.
    #[error("{}", dunst_report(*.patience, said))]
    DunstNeverServed {
        patience: Duration,
        said: Vec<String>,
    },
    #[error("cannot run xdotool")]
    Xdotool(#[source] std::io::Error),
    #[error("cannot write dunst's config or its menu's choice, {}", path.display())]
    DunstFile {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run dunstctl")]
    Dunstctl(#[source] std::io::Error),
    #[error("dunstctl {command} failed ({status})")]
    DunstctlFailed {
        command: &'static str,
        status: std::process::ExitStatus,
    },
    #[error("trayer never showed its panel")]
    NoPanel,
}

/// One paragraph per dunst attempt, as each was printed.
fn dunst_report(patience: Duration, said: &[String]) -> String {
    said.iter()
        .enumerate()
        .map(|(i, tail)| dunst_attempt(patience, i + 1, tail))
        .collect::<Vec<_>>()
        .join("\n")
}

fn dunst_attempt(patience: Duration, attempt: usize, tail: &str) -> String {
    format!(
        "dunst did not serve notifications within {patience:?} (attempt {attempt}); it said:\n{tail}"
    )
}

/// The tools a session needs.
pub const TOOLS: [&str; 4] = ["dbus-daemon", "dbus-monitor", "dunst", "dunstctl"];

/// How long the bus or the monitor may take to start.
const START_PATIENCE: Duration = Duration::from_secs(15);
/// How long one dunst may take to serve before it is started again.
const DUNST_PATIENCE: Duration = Duration::from_secs(5);
const DUNST_ATTEMPTS: usize = 3;

/// Whether `tool` is on the `PATH`.
pub fn installed(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|out| out.status.success())
}

/// The bus, its monitor and dunst.
#[derive(Debug)]
pub struct Session {
    /// The sandbox, on this session's bus: what runs on the session starts
    /// from it.
    pub sandbox: Sandbox,
    /// The bus's address.
    pub address: String,
    /// `dbus-monitor`'s output: what crossed the bus to the notification
    /// server, and who owns which name.
    pub monitor: Lines,
    /// The line dunst's context menu picks ([`Session::choose_action`]).
    menu_choice: std::path::PathBuf,
    /// The bus, the monitor and dunst, in the order they started.
    processes: Vec<Started>,
}

impl Session {
    /// Starts the bus, the monitor and dunst, and waits until dunst owns
    /// `org.freedesktop.Notifications`.
    pub fn start(sandbox: &Sandbox) -> Result<Session, DesktopError> {
        let mut bus_daemon = Started::spawn(
            "dbus-daemon",
            sandbox
                .command("dbus-daemon")
                .args(["--session", "--nofork", "--print-address=1"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        let printed = Lines::follow(
            "dbus-daemon",
            take(bus_daemon.child.stdout.take(), "dbus-daemon", "stdout")?,
        );
        // From here on, a failure drops `session`, which stops what started.
        let mut session = Session {
            sandbox: sandbox.clone(),
            address: String::new(),
            monitor: Lines::follow("nothing", std::io::empty()),
            menu_choice: sandbox.path("dunst-menu-choice"),
            processes: vec![bus_daemon],
        };
        session.address = printed.wait("bus address", START_PATIENCE, |lines| {
            lines
                .iter()
                .find(|l| l.text.starts_with("unix:"))
                .map(|l| l.text.trim().to_owned())
        })?;
        session.sandbox = sandbox.on_bus(&session.address);

        let mut monitor = Started::spawn(
            "dbus-monitor",
            session
                .sandbox
                .command("dbus-monitor")
                .args([
                    "--address",
                    &session.address,
                    "interface='org.freedesktop.Notifications'",
                    "interface='org.freedesktop.DBus',member='NameOwnerChanged'",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        session.monitor = Lines::follow(
            "dbus-monitor",
            take(monitor.child.stdout.take(), "dbus-monitor", "stdout")?,
        );
        session.processes.push(monitor);
        session
            .monitor
            .wait("dbus-monitor attaching", START_PATIENCE, |lines| {
                lines
                    .iter()
                    .find(|l| l.text.starts_with("signal "))
                    .map(|_| ())
            })?;

        let dunst = session.start_dunst()?;
        session.processes.push(dunst);
        Ok(session)
    }

    /// Starts dunst and waits until it owns the notification name. A dunst
    /// that has not within [`DUNST_PATIENCE`] is stopped and started again
    /// (twice at most), what it said shown: it is the notification server,
    /// not what is tested or measured.
    fn start_dunst(&self) -> Result<Started, DesktopError> {
        // Its context menu ("dmenu" to dunst: given a line per action, it
        // prints the one chosen) is a grep for the line the test chose.
        let config = self.sandbox.path("dunstrc");
        let menu = format!(
            "[global]\n    dmenu = /bin/sh -c 'exec grep -F -m1 -f \"$0\"' {}\n",
            self.menu_choice.display()
        );
        std::fs::write(&config, menu).map_err(|source| DesktopError::DunstFile {
            path: config.clone(),
            source,
        })?;
        let mut said = Vec::new();
        for attempt in 1..=DUNST_ATTEMPTS {
            let from = self.monitor.len();
            let mut dunst = Started::spawn(
                "dunst",
                self.sandbox
                    .command("dunst")
                    .arg("-config")
                    .arg(&config)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            )?;
            let output =
                Lines::follow("dunst", take(dunst.child.stderr.take(), "dunst", "stderr")?);
            let serving = self.monitor.wait(
                "dunst owning org.freedesktop.Notifications",
                DUNST_PATIENCE,
                |lines| {
                    let since = lines.get(from..).unwrap_or_default();
                    monitor::name_owned(since, "org.freedesktop.Notifications").then_some(())
                },
            );
            if serving.is_ok() {
                return Ok(dunst);
            }
            drop(dunst);
            let tail = output.tail(25);
            eprintln!(
                "hark-harness: {}",
                dunst_attempt(DUNST_PATIENCE, attempt, &tail)
            );
            said.push(tail);
        }
        Err(DesktopError::DunstNeverServed {
            patience: DUNST_PATIENCE,
            said,
        })
    }

    /// Invokes action `key` of notification `id` as the operator does, by
    /// choosing it in dunst's context menu: dunst sends the
    /// `ActionInvoked` itself. Returns once dunst was asked; the click
    /// reaches the app a moment later.
    pub fn choose_action(&self, id: u64, key: &str) -> Result<(), DesktopError> {
        // dunst's menu lines end `[ID,KEY]`.
        std::fs::write(&self.menu_choice, format!("[{id},{key}]\n")).map_err(|source| {
            DesktopError::DunstFile {
                path: self.menu_choice.clone(),
                source,
            }
        })?;
        let status = self
            .sandbox
            .command("dunstctl")
            .arg("context")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .map_err(DesktopError::Dunstctl)?;
        if !status.success() {
            return Err(DesktopError::DunstctlFailed {
                command: "context",
                status,
            });
        }
        Ok(())
    }

    /// Stops dunst, the monitor and the bus, last started first; the names
    /// of those that ignored SIGTERM and were killed.
    pub fn stop(&mut self) -> Vec<&'static str> {
        let mut killed = Vec::new();
        while let Some(mut process) = self.processes.pop() {
            if process.stop().is_none() {
                killed.push(process.name);
            }
        }
        killed
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A system-tray panel (`trayer`) at the top right of the screen.
#[derive(Debug)]
pub struct TrayHost {
    _trayer: Started,
}

impl TrayHost {
    /// Starts trayer on the session's bus, and waits up to `patience` until
    /// its panel is mapped, owning the tray selection: an icon made before
    /// that may never be embedded. Start it before the app.
    pub fn start(session: &Session, patience: Duration) -> Result<TrayHost, DesktopError> {
        let trayer = Started::spawn(
            "trayer",
            session
                .sandbox
                .command("trayer")
                .args([
                    "--edge",
                    "top",
                    "--align",
                    "right",
                    "--widthtype",
                    "pixel",
                    "--width",
                    "96",
                    "--height",
                    "32",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        let shown = Command::new("timeout")
            .arg(patience.as_secs().to_string())
            .args([
                "xdotool",
                "search",
                "--sync",
                "--onlyvisible",
                "--name",
                "^panel$",
            ])
            .stdout(Stdio::null())
            .status()
            .map_err(DesktopError::Xdotool)?;
        if !shown.success() {
            return Err(DesktopError::NoPanel);
        }
        Ok(TrayHost { _trayer: trayer })
    }
}

/// A child's piped stdout or stderr, which `name` must have.
fn take<T>(pipe: Option<T>, name: &'static str, which: &'static str) -> Result<T, DesktopError> {
    pipe.ok_or(DesktopError::NoPipe { name, pipe: which })
}
