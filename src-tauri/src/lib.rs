//! hark's desktop shell: a thin Tauri 2 layer over `hark-core`.
//!
//! The app runs the core in-process (app socket listener, registry, store,
//! trace events) with [`prompter::DesktopPrompter`] as the operator, and adds
//! what only a desktop has: notifications, the question modal, the tray and
//! the inbox window.
//!
//! # Layout
//! - [`shell`]: the app's state over the core's registry.
//! - [`prompter`], [`notify`]: presenting a new item.
//! - [`windows`], [`tray`]: the modal and inbox windows; the tray icon.
//! - [`rendering`]: the page drawn on the CPU, with no GL in the app.
//! - [`ipc`]: the commands the windows call, and the TypeScript they see
//!   (agents' Markdown is rendered by `hark_web::markdown`, the web
//!   surface's renderer too);
//!   [`ipc_commands`]: their one list, which `build.rs` reads too.

#[macro_use]
pub mod ipc_commands;
pub mod ipc;
pub mod notify;
pub mod prompter;
pub mod rendering;
pub mod shell;
pub mod tray;
pub mod windows;

use std::process::ExitCode;
use std::sync::Arc;

use hark_core::bridge::socket::SocketError;
use hark_core::daemon::serve;
use hark_core::registry::Event;
use hark_core::trace::{LogFormat, init_logging};
use tauri::{AppHandle, Emitter, Manager, RunEvent, Runtime};
use tokio::sync::{Notify, oneshot};
use tracing::level_filters::LevelFilter;

use crate::notify::Notifier;
use crate::prompter::DesktopPrompter;
use crate::shell::{INBOX_CHANGED, Shell};

/// Whether a graphical display is reachable (Linux and the BSDs need one named).
fn has_display() -> bool {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return true;
    }
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()))
}

/// Starts the desktop app; returns when it quits.
pub fn run() -> ExitCode {
    let json = std::env::var(hark_core::env::LOG_FORMAT).is_ok_and(|f| f == "json");
    init_logging(
        if json {
            LogFormat::Json
        } else {
            LogFormat::Text
        },
        LevelFilter::INFO,
    );
    if !has_display() {
        eprintln!(
            "hark: no display to show the desktop app on (DISPLAY and WAYLAND_DISPLAY are unset)."
        );
        eprintln!(
            "hint: over SSH or headless, run `hark serve --prompter terminal` to answer on this terminal"
        );
        return ExitCode::from(2);
    }
    let builder =
        tauri::Builder::default().plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            // A second `hark app` focuses this one. Any client of the
            // session bus can make this call (the plugin's ExecuteCallback),
            // so nothing it sends is taken: it only shows the inbox.
            windows::show(app, windows::View::Inbox);
        }));
    match run_app(builder) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hark: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The invoke handler of the commands it is given, all in [`ipc`].
macro_rules! invoke_handler {
    ($($command:ident),*) => {
        tauri::generate_handler![$(ipc::$command),*]
    };
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
    Web(#[from] hark_web::WebError),
    #[error(transparent)]
    Hub(#[from] hark_hub::HubError),
    #[error(transparent)]
    Tauri(#[from] tauri::Error),
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

/// Builds and runs the app on any runtime (a smoke test can pass a mock one).
pub fn run_app<R: Runtime>(builder: tauri::Builder<R>) -> Result<(), AppError> {
    let app = builder
        .invoke_handler(with_ipc_commands!(invoke_handler))
        .setup(|app| {
            start_core(app.handle())?;
            windows::prepare(app.handle());
            if let Err(e) = tray::create(app.handle()) {
                tracing::warn!("no tray icon: {e}");
            }
            tray::refresh(app.handle());
            Ok(())
        })
        .build(tauri::generate_context!())?;
    app.run(|_app, event| {
        // Closing the last window keeps hark in the tray; only Quit exits.
        if let RunEvent::ExitRequested {
            api, code: None, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    Ok(())
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
    fn note<R: Runtime>(
        &mut self,
        event: Option<Event>,
        app: &AppHandle<R>,
        notifier: &Arc<Notifier>,
    ) {
        match event {
            Some(Event::Settled { item, .. }) => {
                notifier.settled(item.id);
                self.items = true;
                self.settled = true;
            }
            // A run started or ended: the inbox's Runs table changes, not the tray.
            Some(Event::RunChanged | Event::DevicesChanged) => {}
            // The store began or stopped failing: the tray says so.
            Some(Event::StoreHealth(_)) => self.items = true,
            // Its notification says that its agent is paused until answered.
            Some(Event::Parked(item)) => {
                if !app.state::<Arc<Shell>>().do_not_disturb() {
                    notifier.show(app, &item);
                }
                self.items = true;
            }
            Some(Event::Added(_)) | None => self.items = true,
        }
    }
}

/// Joins the team's hub, with `[hub]` (or `hark app --hub URL`): the
/// team's items show here, every reply is decided there.
fn join_hub<R: Runtime>(
    app: &AppHandle<R>,
    config: &hark_core::config::Config,
    registry: &hark_core::registry::Registry,
) -> Result<(), AppError> {
    let hub_url = std::env::var(hark_core::env::HUB).ok();
    let Some(options) =
        hark_hub::HubOptions::from_config(config.hub.as_ref(), hub_url, hark_hub::Role::Operator)
    else {
        return Ok(());
    };
    let serving = tauri::async_runtime::block_on(async {
        let hub = hark_hub::Hub::connect(options).await?;
        Ok::<_, hark_hub::HubError>(hub.serve(registry))
    })?;
    app.manage(HubServing(serving));
    Ok(())
}

/// The hub's tasks, kept as long as the app runs.
struct HubServing(#[allow(dead_code)] hark_hub::Serving);

/// Binds the app socket, opens the store and serves the bridge with the
/// desktop prompter; follows the registry to keep windows and tray current.
fn start_core<R: Runtime>(app: &AppHandle<R>) -> Result<(), AppError> {
    let prompter = Arc::new(DesktopPrompter { app: app.clone() });
    let prepared = tauri::async_runtime::block_on(async {
        serve::prepare(
            prompter,
            serve::ServeOptions {
                own_env: rendering::set_by_the_app(),
                ..Default::default()
            },
        )
    })?;
    let registry = prepared.daemon.registry.clone();
    // The web surface too, when `[web]` is configured: the same registry,
    // so a reply on the phone closes the modal here and the other way round.
    // And the phone push, with `[push]`.
    if let Some(web) = hark_web::WebOptions::from_whole_config(&prepared.config, None)? {
        let serving = tauri::async_runtime::block_on(hark_web::start(registry.clone(), web))?;
        eprintln!("hark: the web surface is on {}", serving.url);
        let _ = prepared.daemon.web_url.set(serving.url);
    }
    join_hub(app, &prepared.config, &registry)?;
    let notifications = prepared.config.notifications.clone();
    let notifier = Arc::new(Notifier::new(notifications.clone()));
    app.manage(notifier.clone());
    app.manage(windows::Settings {
        release_after: std::time::Duration::from_secs(prepared.config.window_release_secs),
        theme: prepared.config.theme,
    });
    // What is pending, for the window to be released only when nothing is.
    app.manage(registry.clone());
    tauri::async_runtime::spawn(notifier.clone().listen(app.clone()));
    let stop = Arc::new(Notify::new());
    let (stopped_tx, stopped_rx) = oneshot::channel();
    app.manage(Arc::new(Shell::new(
        registry.clone(),
        prepared.daemon.dispatcher.clone(),
        notifications.do_not_disturb,
        stop.clone(),
        stopped_rx,
    )));
    eprintln!(
        "hark: the desktop app is serving on {}",
        prepared.socket_file.path().display()
    );
    tracing::info!(pid = std::process::id(), "desktop app started");
    // SIGTERM (a logout, a service manager) or Ctrl-C quits as the tray's
    // Quit does: every pending item is settled as cancelled first.
    let on_signal = app.clone();
    tauri::async_runtime::spawn(async move {
        serve::shutdown_signal().await;
        tracing::info!("asked to stop by a signal");
        on_signal.state::<Arc<Shell>>().quit(&on_signal);
    });
    tauri::async_runtime::spawn(async move {
        let socket_file = prepared.socket_file;
        hark_core::daemon::listener::run(prepared.listener, prepared.daemon, async move {
            stop.notified().await
        })
        .await;
        drop(socket_file);
        let _ = stopped_tx.send(());
    });
    let app = app.clone();
    let mut events = registry.subscribe();
    tauri::async_runtime::spawn(async move {
        use tokio::sync::broadcast::error::{RecvError, TryRecvError};
        loop {
            let first = match events.recv().await {
                Ok(event) => Some(event),
                Err(RecvError::Lagged(_)) => None,
                Err(RecvError::Closed) => return,
            };
            // A burst (fifty agents asking at once) is drawn once: every
            // event already waiting is taken before the windows and the
            // tray are brought up to date.
            let mut changed = Changed::default();
            changed.note(first, &app, &notifier);
            loop {
                match events.try_recv() {
                    Ok(event) => changed.note(Some(event), &app, &notifier),
                    Err(TryRecvError::Lagged(_)) => changed.note(None, &app, &notifier),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Closed) => return,
                }
            }
            if changed.settled && registry.pending().is_empty() {
                windows::modal_done(&app);
            }
            // The windows first: the modal is what the operator waits for.
            let _ = app.emit(INBOX_CHANGED, ());
            if changed.items {
                tray::refresh(&app);
            }
        }
    });
    Ok(())
}
