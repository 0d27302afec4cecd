//! The app's one window, which shows one of two views: the question modal
//! or the inbox. It lives in a process of its own, `hark-window` (the
//! webview), which the app starts when there is something to show and ends
//! once nothing has waited for a while.
//!
//! One window, not two: every WebKit webview of its own costs a web process
//! (~50–90 MB each here), and the app's whole footprint is a target. The
//! window takes each view's title, size and stacking: the modal is small and
//! on top; the inbox larger and ordinary. A question arriving while the
//! inbox is open takes the window over, and hands it back to the inbox once
//! nothing is waiting.
//!
//! A window nobody sees is not kept: once it has been hidden with nothing
//! pending for [`Settings::release_after`] (the config's `window_release_secs`),
//! its process is ended, and WebKit's processes go with it; the next
//! question or click starts it again. The wait keeps a burst of questions
//! (an agent asking one after another) from paying for a new process each.
//! A separate process, not a window destroyed in this one: a process that
//! has loaded WebKit keeps ~75 MB resident with no webview at all (measured:
//! its libraries' relocated pages, the speech synthesis voices it links),
//! which this one, never loading it, does not pay.
//!
//! The window process holds nothing: the items stay here, so a window that
//! crashes or is killed loses nothing (its questions are still pending and
//! shown again on the next open).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use hark_core::bridge::window::{FromWindow, ToWindow, line};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use crate::App;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// One modal for every pending item, in turn.
    Modal,
    /// Pending items, then the history, the runs and the dispatch form.
    Inbox,
}

/// The core's name for it, which the page's inbox carries.
impl From<View> for hark_core::bridge::views::View {
    fn from(view: View) -> Self {
        match view {
            View::Modal => hark_core::bridge::views::View::Modal,
            View::Inbox => hark_core::bridge::views::View::Inbox,
        }
    }
}

impl View {
    pub fn label(self) -> &'static str {
        match self {
            View::Modal => "modal",
            View::Inbox => "inbox",
        }
    }

    fn title(self) -> &'static str {
        match self {
            View::Modal => "hark — an agent asks",
            View::Inbox => "hark — inbox",
        }
    }

    /// Its logical size, width by height.
    fn size(self) -> (f64, f64) {
        match self {
            View::Modal => (600.0, 560.0),
            View::Inbox => (820.0, 600.0),
        }
    }
}

/// The config's say over the window.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a hidden window with nothing pending is kept.
    pub release_after: std::time::Duration,
    /// Its colours.
    pub theme: hark_core::config::Theme,
    /// The window process's program (`hark-window` beside this one).
    pub program: PathBuf,
}

/// The window: what it shows, and its process while it has one.
#[derive(Debug)]
pub struct Windows {
    settings: Settings,
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The view on screen; `None` while the window is hidden.
    view: Option<View>,
    /// The modal took the window over from the open inbox.
    back_to_inbox: bool,
    /// Counts hides and shows: a release waits for the hide it follows
    /// to be the last thing that happened.
    changes: u64,
    /// The window process, while there is one.
    process: Option<Process>,
    /// Counts the processes started, so one that ended is told from the next.
    started: u64,
    /// The app is quitting: no process is started ahead any more.
    quitting: bool,
}

impl State {
    /// Nothing is on screen any more; the change's count.
    fn hide(&mut self) -> u64 {
        self.view = None;
        self.back_to_inbox = false;
        self.changes += 1;
        self.changes
    }
}

/// A window process: what goes to it, and word of its end.
#[derive(Debug)]
struct Process {
    to: mpsc::UnboundedSender<ToWindow>,
    number: u64,
    pid: Option<u32>,
    /// Ends it at once (when it has not gone by itself).
    kill: oneshot::Sender<()>,
    /// True once it has exited.
    exited: watch::Receiver<bool>,
}

/// How long an ended window process has to exit by itself before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Windows {
    pub fn new(settings: Settings) -> Windows {
        Windows {
            settings,
            inner: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The view on screen, if the window is shown.
    pub fn view(&self) -> Option<View> {
        self.state().view
    }

    /// Sends `message` to the window process, if there is one.
    fn send(state: &State, message: ToWindow) {
        if let Some(process) = &state.process {
            let _ = process.to.send(message);
        }
    }

    /// Emits `event` to the page, if there is a window.
    pub fn emit(&self, event: &str, payload: serde_json::Value) {
        Windows::send(
            &self.state(),
            ToWindow::Emit {
                event: event.to_owned(),
                payload,
            },
        );
    }
}

/// Whether WebDriver drives the app (tauri-driver says so): its window is
/// then started with the app and kept for the driver's session, never
/// released.
fn automated() -> bool {
    std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true")
}

/// Under WebDriver, starts the window process hidden with the app, for the
/// driver's session to find; otherwise (on Linux) one waits ahead, for the
/// first show (see [`start_ahead`]).
pub fn prepare(app: &App) {
    let mut state = app.windows.state();
    if automated() {
        start(app, &mut state, false);
    } else {
        start_ahead(app, &mut state);
    }
}

/// On Linux, starts a window process that waits until something is shown
/// (`hark-window`'s `dormant`): a show then finds WebKit's libraries
/// loaded and initialised, about a third of the first modal's time after a
/// release. It costs the idle app ~10 MB. Elsewhere nothing is started
/// until something is shown.
fn start_ahead(app: &App, state: &mut State) {
    if cfg!(target_os = "linux") && !state.quitting {
        start(app, state, true);
    }
}

/// Starts the window process (`ahead`: to wait until it is needed), if
/// there is none; a failure is logged, and the next show tries again.
fn start(app: &App, state: &mut State, ahead: bool) {
    if state.process.is_some() {
        return;
    }
    let settings = &app.windows.settings;
    let mut command = tokio::process::Command::new(&settings.program);
    match settings.theme {
        hark_core::config::Theme::System => {}
        hark_core::config::Theme::Light => {
            command.args(["--theme", "light"]);
        }
        hark_core::config::Theme::Dark => {
            command.args(["--theme", "dark"]);
        }
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if ahead {
        command.env(hark_core::bridge::window::AHEAD_ENV, "1");
    }
    let _entered = app.runtime.enter();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::error!(program = %settings.program.display(), "cannot start the window: {e}");
            return;
        }
    };
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return;
    };
    state.started += 1;
    let number = state.started;
    let (to, mut messages) = mpsc::unbounded_channel::<ToWindow>();
    let (kill, killed) = oneshot::channel();
    let (exit, exited) = watch::channel(false);
    state.process = Some(Process {
        to,
        number,
        pid: child.id(),
        kill,
        exited,
    });
    tracing::info!(pid = child.id(), ahead, "window process started");
    app.runtime.spawn(async move {
        while let Some(message) = messages.recv().await {
            let text = line(&message) + "\n";
            if input.write_all(text.as_bytes()).await.is_err() {
                break;
            }
        }
        // Dropped: the process reads its input's end and exits.
    });
    let app = app.clone();
    let runtime = app.runtime.clone();
    runtime.spawn(async move {
        let mut lines = BufReader::new(output).lines();
        let mut killed = killed;
        let mut reading = true;
        // Its messages until it exits (its output's end alone is not its
        // exit), or until it is killed.
        let status = loop {
            tokio::select! {
                line = lines.next_line(), if reading => match line {
                    Ok(Some(text)) => match serde_json::from_str::<FromWindow>(&text) {
                        Ok(message) => take(&app, number, message),
                        Err(e) => tracing::warn!("the window said something unknown: {e}"),
                    },
                    _ => reading = false,
                },
                status = child.wait() => break status.ok(),
                Ok(()) = &mut killed => {
                    let _ = child.kill().await;
                    break child.wait().await.ok();
                }
            }
        };
        let _ = exit.send(true);
        if ended(&app, number) {
            tracing::warn!(?status, "window process ended by itself");
        } else {
            tracing::info!(?status, "window released");
            crate::resident::give_back_once_settled(&app.runtime);
            start_ahead(&app, &mut app.windows.state());
        }
    });
}

/// What window process `number` says: a page's call (answered on its own
/// task, as a reply can wait on the team's hub) or its closing. A process
/// already let go is not heard, and a reply goes only to the process that
/// asked (each numbers its calls from one).
fn take(app: &App, number: u64, message: FromWindow) {
    let current = move |state: &State| state.process.as_ref().is_some_and(|p| p.number == number);
    if !current(&app.windows.state()) {
        return;
    }
    match message {
        FromWindow::Call {
            call,
            command,
            args,
        } => {
            let app = app.clone();
            app.runtime.clone().spawn(async move {
                let result = app.call(&command, args).await;
                let state = app.windows.state();
                if current(&state) {
                    Windows::send(&state, ToWindow::Reply { call, result });
                }
            });
        }
        FromWindow::Closed => hidden(app),
    }
}

/// The window process `number` ended: released (let go here first), or
/// by itself (crashed, killed), when the window is hidden and the next
/// show starts another. Whether it ended by itself.
fn ended(app: &App, number: u64) -> bool {
    let mut state = app.windows.state();
    let by_itself = state.process.as_ref().is_some_and(|p| p.number == number);
    if by_itself {
        state.process = None;
        state.hide();
    }
    by_itself
}

/// Hides the window, and releases it (its process ended, WebKit's with it)
/// once it has stayed hidden with nothing pending for [`Settings::release_after`].
fn hide(app: &App) {
    Windows::send(&app.windows.state(), ToWindow::Hide);
    hidden(app);
}

/// The window is hidden (by [`hide`], or closed by the operator).
fn hidden(app: &App) {
    let hidden = app.windows.state().hide();
    if automated() {
        return;
    }
    let after = app.windows.settings.release_after;
    let app = app.clone();
    app.runtime.clone().spawn(async move {
        tokio::time::sleep(after).await;
        let idle = app.shell.registry.pending().is_empty();
        let process = {
            let mut state = app.windows.state();
            if state.changes != hidden || !idle {
                return;
            }
            state.process.take()
        };
        // Its input ends, and the process with it ("window released").
        if let Some(process) = process {
            end(process).await;
        }
    });
}

/// Ends a window process: its input ends, and it is killed if it has not
/// exited within [`GRACE`]. Waits until it has exited.
async fn end(process: Process) {
    let Process {
        to,
        kill,
        mut exited,
        ..
    } = process;
    drop(to);
    if tokio::time::timeout(GRACE, exited.wait_for(|gone| *gone))
        .await
        .is_err()
    {
        tracing::warn!("the window process did not end when asked: killed");
        let _ = kill.send(());
        let _ = exited.wait_for(|gone| *gone).await;
    }
}

impl Windows {
    /// Ends the window process, if there is one (the app quits), and
    /// waits until it has exited.
    pub async fn end(&self) {
        let process = {
            let mut state = self.state();
            state.quitting = true;
            state.process.take()
        };
        if let Some(process) = process {
            end(process).await;
        }
    }
}

/// Shows `view`, on top (the modal) and focused, starting the window
/// process if there is none.
pub fn show(app: &App, view: View) {
    let mut state = app.windows.state();
    start(app, &mut state, false);
    let before = state.view;
    state.back_to_inbox = match view {
        View::Modal => before == Some(View::Inbox) || state.back_to_inbox,
        View::Inbox => false,
    };
    state.view = Some(view);
    state.changes += 1;
    let (width, height) = view.size();
    Windows::send(
        &state,
        ToWindow::Show {
            view: view.into(),
            title: view.title().to_owned(),
            width,
            height,
        },
    );
    let pid = state.process.as_ref().and_then(|p| p.pid);
    tracing::info!(window = view.label(), pid, "window shown");
}

/// Nothing is waiting any more: the modal gives the window back to the
/// inbox it took it from, or hides.
pub fn modal_done(app: &App) {
    let (view, back_to_inbox) = {
        let state = app.windows.state();
        (state.view, state.back_to_inbox)
    };
    if view != Some(View::Modal) {
        return;
    }
    if back_to_inbox {
        show(app, View::Inbox);
    } else {
        hide(app);
    }
}
