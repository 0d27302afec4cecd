//! hark's desktop app: the resident part, which stays from login to logout.
//!
//! It runs the core in-process (app socket listener, registry, store,
//! trace events) with [`prompter::DesktopPrompter`] as the operator, and
//! adds what only a desktop has: notifications, the tray and its menu. The
//! window (the question modal and the inbox) is another process,
//! `hark-window`, which [`windows`] starts when there is something to show
//! and ends when nothing has waited for a while, so this one never loads a
//! web engine (see `windows` for why: most of its idle cost).
//!
//! # Layout
//! - [`shell`]: the app's state over the core's registry.
//! - [`prompter`], [`notify`]: presenting a new item.
//! - [`windows`], [`tray`]: the window process and what it shows; the tray.
//! - [`ipc`]: the commands the window's page calls (passed on by the window
//!   process), and the TypeScript they see (agents' Markdown is rendered by
//!   `hark_web::markdown`, the web surface's renderer too);
//!   [`ipc_commands`]: their one list, which the window's `build.rs` reads too.
//! - [`single`]: one app a session: a second one shows this one's inbox.
//! - [`rendering`]: what the window's processes run with: the page drawn on the CPU, with no GL and no JIT.

#[macro_use]
pub mod ipc_commands;
pub mod ipc;
pub mod notify;
pub mod prompter;
pub mod rendering;
mod resident;
pub mod shell;
pub mod single;
pub mod tray;
pub mod windows;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use hark_core::bridge::socket::SocketError;
use hark_core::bridge::window::INBOX_CHANGED;
use hark_core::daemon::serve;
use hark_core::registry::Event;
use hark_core::trace::{LogFormat, init_logging};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tokio::sync::{Notify, oneshot};
use tracing::level_filters::LevelFilter;

use crate::notify::Notifier;
use crate::prompter::DesktopPrompter;
use crate::shell::Shell;
use crate::windows::Windows;

/// Whether a graphical display is reachable (Linux and the BSDs need one named).
fn has_display() -> bool {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return true;
    }
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()))
}

/// What the main thread's event loop does for the rest of the app: the
/// tray and its menu live there (GTK, AppKit and Win32 want them on it).
#[derive(Debug)]
pub enum UiEvent {
    /// Bring the tray up to date with the pending items.
    RefreshTray,
    /// A tray menu entry was clicked.
    Menu(tray_icon::menu::MenuId),
    /// End the app.
    Exit,
}

/// The app's parts, shared by its tasks, the event loop and the window's calls.
#[derive(Debug, Clone)]
pub struct App(Arc<Parts>);

#[derive(Debug)]
pub struct Parts {
    pub shell: Shell,
    pub notifier: Arc<Notifier>,
    pub windows: Windows,
    /// The runtime the core, the notifications and the window's calls run on.
    pub runtime: tokio::runtime::Handle,
    ui: Mutex<EventLoopProxy<UiEvent>>,
    /// The hub's tasks, kept as long as the app runs.
    _hub: Option<hark_hub::Serving>,
}

impl std::ops::Deref for App {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

impl App {
    /// Hands `event` to the main thread.
    pub fn ui(&self, event: UiEvent) {
        let _ = self
            .ui
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send_event(event);
    }

    /// Ends the app.
    pub fn exit(&self) {
        self.ui(UiEvent::Exit);
    }

    /// Runs the page's call (see [`ipc::call`]) for the window process.
    pub async fn call(
        &self,
        command: &str,
        args: serde_json::Value,
    ) -> hark_core::bridge::window::CallResult {
        use hark_core::bridge::window::CallResult;
        match ipc::call(self, command, args).await {
            Ok(value) => CallResult::Ok(value),
            Err(error) => CallResult::Error(serde_json::to_value(error).unwrap_or_default()),
        }
    }

    /// Tells the window's page that items changed.
    pub fn inbox_changed(&self) {
        self.windows.emit(INBOX_CHANGED, serde_json::Value::Null);
    }
}

/// Starts the desktop app; returns when it could not start (it exits
/// from its event loop otherwise).
pub fn run() -> ExitCode {
    init_logging(LogFormat::from_env(), LevelFilter::INFO);
    if !has_display() {
        eprintln!(
            "hark: no display to show the desktop app on (DISPLAY and WAYLAND_DISPLAY are unset)."
        );
        eprintln!(
            "hint: over SSH or headless, run `hark serve --prompter terminal` to answer on this terminal"
        );
        return ExitCode::from(2);
    }
    match run_app() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hark: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the app could not start.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(
        "another hark is already serving on {} (a `hark serve`, or the app under another session); stop it first",
        .0.display()
    )]
    AlreadyRunning(std::path::PathBuf),
    #[error(transparent)]
    Serve(serve::ServeError),
    #[error(transparent)]
    Daemon(hark_daemon::AssembleError),
    #[error("the hub's URL (`--hub`, `HARK_HUB`): {0}")]
    HubUrl(#[from] hark_core::config::UrlError),
    #[error("cannot start the app's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("there is no {} beside this program: install it with hark-app", .0.display())]
    NoWindowProgram(std::path::PathBuf),
}

impl From<serve::ServeError> for AppError {
    fn from(e: serve::ServeError) -> AppError {
        match e {
            serve::ServeError::Socket(SocketError::AlreadyRunning(path)) => {
                AppError::AlreadyRunning(path)
            }
            other => AppError::Serve(other),
        }
    }
}

/// The core's refusals as the core's (another app running is the one the
/// second `hark app` hands over to); the surfaces' as they are.
impl From<hark_daemon::AssembleError> for AppError {
    fn from(e: hark_daemon::AssembleError) -> AppError {
        match e {
            hark_daemon::AssembleError::Serve(e) => e.into(),
            other => AppError::Daemon(other),
        }
    }
}

/// The window process's program: `hark-window` beside this one.
fn window_program() -> Result<std::path::PathBuf, AppError> {
    let name = if cfg!(windows) {
        "hark-window.exe"
    } else {
        "hark-window"
    };
    let here = std::env::current_exe().map_err(AppError::Runtime)?;
    let program = here.with_file_name(name);
    if program.is_file() {
        Ok(program)
    } else {
        Err(AppError::NoWindowProgram(program))
    }
}

/// Starts the core, the tray and the event loop; does not return once the
/// loop runs (the app exits from it).
fn run_app() -> Result<(), AppError> {
    let program = window_program()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::Runtime)?;
    let event_loop = EventLoopBuilder::<UiEvent>::with_user_event().build();
    let app = match start_core(&runtime, event_loop.create_proxy(), program) {
        Ok(app) => app,
        // Another app of this session serves: it shows its inbox.
        Err(AppError::AlreadyRunning(_)) if single::show_the_first(&runtime) => return Ok(()),
        Err(e) => return Err(e),
    };
    let single = single::Single::claim(&runtime, &app);
    windows::prepare(&app);
    let tray = tray::Tray::create(&app);
    let menu_events = event_loop.create_proxy();
    tray_icon::menu::MenuEvent::set_event_handler(Some(
        move |event: tray_icon::menu::MenuEvent| {
            let _ = menu_events.send_event(UiEvent::Menu(event.id));
        },
    ));
    tray::refresh(&app, tray.as_ref());
    resident::give_back_once_settled(runtime.handle());
    event_loop.run(move |event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        // The runtime and the session's name live as long as the loop.
        let _ = (&runtime, &single);
        if let tao::event::Event::UserEvent(event) = event {
            match event {
                UiEvent::RefreshTray => tray::refresh(&app, tray.as_ref()),
                UiEvent::Menu(id) => tray::on_menu(&app, &id),
                UiEvent::Exit => *control_flow = ControlFlow::Exit,
            }
        }
    })
}

/// What a run of registry events changed.
#[derive(Debug, Default)]
struct Changed {
    /// Items were added, parked or settled (or events were missed): the tray too.
    items: bool,
    /// An item settled: the modal may be done.
    settled: bool,
}

impl Changed {
    /// Takes one event (`None`: some were missed).
    fn note(&mut self, event: Option<Event>, app: &App) {
        match event {
            Some(Event::Settled { item, .. }) => {
                app.notifier.settled(item.id);
                self.items = true;
                self.settled = true;
            }
            // A run started or ended: the inbox's Runs table changes, not the tray.
            Some(Event::RunChanged | Event::DevicesChanged) => {}
            // The store began or stopped failing: the tray says so.
            Some(Event::StoreHealth(_)) => self.items = true,
            // Its notification says that its agent is paused until answered.
            Some(Event::Parked(item)) => {
                if !app.shell.do_not_disturb() {
                    app.notifier.show(app, &item);
                }
                self.items = true;
            }
            Some(Event::Added(_)) | None => self.items = true,
        }
    }
}

/// Binds the app socket, opens the store and serves the bridge with the
/// desktop prompter; follows the registry to keep the window and tray current.
fn start_core(
    runtime: &tokio::runtime::Runtime,
    ui: EventLoopProxy<UiEvent>,
    program: std::path::PathBuf,
) -> Result<App, AppError> {
    let _entered = runtime.enter();
    let prompter = Arc::new(DesktopPrompter::default());
    // The web surface too, when `[web]` is configured: the same registry,
    // so a reply on the phone closes the modal here and the other way round.
    // And the phone push, with `[push]`; and the team's hub, with `[hub]`
    // (or `hark app --hub URL`): the team's items show here, every reply is
    // decided there.
    let assembled = runtime.block_on(hark_daemon::assemble(
        prompter.clone(),
        serve::ServeOptions {
            own_env: rendering::set_by_the_app(),
            ..Default::default()
        },
        hark_daemon::Surfaces {
            web: hark_daemon::Web::Configured {
                listen: None,
                insecure_http: false,
            },
            hub: Some(hark_daemon::HubJoin {
                url: std::env::var(hark_core::env::HUB)
                    .ok()
                    .map(|url| url.parse())
                    .transpose()?,
                role: hark_hub::Role::Operator,
                required: false,
            }),
        },
    ))?;
    if let Some(web) = &assembled.web {
        eprintln!("hark: the web surface is on {}", web.url);
    }
    let hub = assembled.hub.map(|joined| joined.serving);
    let prepared = assembled.prepared;
    let registry = prepared.daemon.registry.clone();
    let notifications = prepared.config.notifications.clone();
    let notifier = Arc::new(Notifier::new(notifications.clone()));
    let stop = Arc::new(Notify::new());
    let (stopped_tx, stopped_rx) = oneshot::channel();
    let app = App(Arc::new(Parts {
        shell: Shell::new(
            registry.clone(),
            prepared.daemon.dispatcher.clone(),
            notifications.do_not_disturb,
            stop.clone(),
            stopped_rx,
        ),
        notifier: notifier.clone(),
        windows: Windows::new(windows::Settings {
            release_after: std::time::Duration::from_secs(prepared.config.window_release_secs),
            theme: prepared.config.theme,
            program,
        }),
        runtime: runtime.handle().clone(),
        ui: Mutex::new(ui),
        _hub: hub,
    }));
    let _ = prompter.app.set(app.clone());
    runtime.spawn(notifier.listen(app.clone()));
    eprintln!(
        "hark: the desktop app is serving on {}",
        prepared.socket_file.path().display()
    );
    tracing::info!(pid = std::process::id(), "desktop app started");
    // SIGTERM (a logout, a service manager) or Ctrl-C quits as the tray's
    // Quit does: every pending item is settled as cancelled first.
    let on_signal = app.clone();
    runtime.spawn(async move {
        serve::shutdown_signal().await;
        tracing::info!("asked to stop by a signal");
        on_signal.shell.quit(&on_signal);
    });
    runtime.spawn(async move {
        let socket_file = prepared.socket_file;
        hark_core::daemon::listener::run(prepared.listener, prepared.daemon, async move {
            stop.notified().await
        })
        .await;
        drop(socket_file);
        let _ = stopped_tx.send(());
    });
    runtime.spawn(follow_registry(app.clone(), registry.subscribe()));
    Ok(app)
}

/// Keeps the window and the tray current with the registry's events.
async fn follow_registry(app: App, mut events: tokio::sync::broadcast::Receiver<Event>) {
    use tokio::sync::broadcast::error::{RecvError, TryRecvError};
    loop {
        let first = match events.recv().await {
            Ok(event) => Some(event),
            Err(RecvError::Lagged(_)) => None,
            Err(RecvError::Closed) => return,
        };
        // A burst (fifty agents asking at once) is drawn once: every
        // event already waiting is taken before the window and the
        // tray are brought up to date.
        let mut changed = Changed::default();
        changed.note(first, &app);
        loop {
            match events.try_recv() {
                Ok(event) => changed.note(Some(event), &app),
                Err(TryRecvError::Lagged(_)) => changed.note(None, &app),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => return,
            }
        }
        if changed.settled && app.shell.registry.pending().is_empty() {
            windows::modal_done(&app);
        }
        // The window first: the modal is what the operator waits for.
        app.inbox_changed();
        if changed.items {
            app.ui(UiEvent::RefreshTray);
        }
    }
}
