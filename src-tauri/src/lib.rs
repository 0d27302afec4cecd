//! hark's window process: the question modal and the inbox, in one
//! webview, for the desktop app (`hark-app`) that starts it.
//!
//! The app stays resident (tray, notifications, the core) and starts this
//! process when there is something to show; it ends it once nothing has
//! waited for a while (`window_release_secs`), and WebKit's processes go
//! with it. A process that has loaded WebKit keeps ~75 MB resident even
//! with no webview (its libraries' relocated pages, flite's voices), which
//! is why the window is not merely destroyed inside the app.
//!
//! This process holds nothing of its own: every command the page calls is
//! passed to the app over the process's standard output and answered on
//! its standard input ([`hark_core::bridge::window`]); the app says what to
//! show. Its input ending (the app gone) ends it.
//!
//! The page is drawn on the CPU, as the app's environment, which this
//! process inherits, says (the app's `rendering` module).
//!
//! # Layout
//! - [`channel`]: the pipes to the app, and the page's calls in flight.
//! - [`dormant`]: waiting, started ahead, until the window is needed.
//! - [`preload`]: WebKit's processes started faster.

pub mod channel;
#[cfg(target_os = "linux")]
pub mod dormant;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod preload;

use std::process::ExitCode;
use std::sync::Arc;

use hark_core::bridge::views::View;
use hark_core::bridge::window::{FromWindow, VIEW_CHANGED};
use hark_core::trace::{LogFormat, init_logging};
use tauri::{AppHandle, Emitter, LogicalSize, Manager, WebviewUrl, WebviewWindowBuilder};
use tracing::level_filters::LevelFilter;

use crate::channel::Channel;

/// The window's label (and its capability's).
pub const LABEL: &str = "main";

/// Why the window could not run.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error("unknown argument {0:?} (hark-window is started by hark-app: --theme light|dark)")]
    Usage(String),
    #[error(transparent)]
    Tauri(#[from] tauri::Error),
}

/// The colours the app's config chose, if it chose: `--theme light|dark`.
fn theme_from_args() -> Result<Option<(tauri::Theme, &'static str)>, WindowError> {
    let mut args = std::env::args().skip(1);
    let mut theme = None;
    while let Some(arg) = args.next() {
        theme = match (arg.as_str(), args.next().as_deref()) {
            ("--theme", Some("light")) => Some((tauri::Theme::Light, "light")),
            ("--theme", Some("dark")) => Some((tauri::Theme::Dark, "dark")),
            _ => return Err(WindowError::Usage(arg)),
        };
    }
    Ok(theme)
}

/// Runs the window until the app lets it go.
pub fn run() -> ExitCode {
    // SAFETY: first thing in `main`, before any other thread exists.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    let preloaded = unsafe { preload::for_webkit() };
    init_logging(LogFormat::from_env(), LevelFilter::INFO);
    tracing::debug!("window process: main");
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Some(path) = preloaded {
        tracing::debug!(path = %path.display(), "window process: WebKit's processes preload");
    }
    match theme_from_args().and_then(|theme| run_window(Channel::to_the_app(), theme)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hark-window: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_window(
    channel: Arc<Channel>,
    theme: Option<(tauri::Theme, &'static str)>,
) -> Result<(), WindowError> {
    let calls = channel.clone();
    let app = tauri::Builder::default()
        .invoke_handler(move |invoke| {
            calls.forward(invoke);
            true
        })
        .setup(move |app| {
            // Started ahead: GTK and Tauri are up (~20 ms of a show, done
            // while nothing waits); the window waits until it is needed.
            #[cfg(target_os = "linux")]
            if std::env::var_os(hark_core::bridge::window::AHEAD_ENV).is_some()
                && dormant::wait() == dormant::Woken::LetGo
            {
                // Let go before it built anything: nothing to close.
                std::process::exit(0);
            }
            tracing::debug!("window process: setting up");
            build(app.handle(), theme, &channel)?;
            channel.follow(app.handle().clone());
            tracing::debug!("window process: window built");
            Ok(())
        })
        .build(tauri::generate_context!())?;
    app.run(|_app, event| {
        // Closing the window hides it; only the app ends this process.
        if let tauri::RunEvent::ExitRequested {
            api, code: None, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    Ok(())
}

/// Builds the window, hidden: the app's first message says what to show.
fn build(
    app: &AppHandle,
    theme: Option<(tauri::Theme, &'static str)>,
    channel: &Arc<Channel>,
) -> tauri::Result<()> {
    let mut builder = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App("index.html".into()))
        .title("hark")
        .inner_size(600.0, 560.0)
        // Ctrl+= and Ctrl+- zoom the page: the desktop's text scaling does
        // not reach WebKitGTK's pages.
        .zoom_hotkeys_enabled(true)
        .visible(false);
    if let Some((theme, name)) = theme {
        // The page's colours follow `data-theme` over the system's
        // preference (WebKitGTK does not take the window's for it).
        builder = builder.theme(Some(theme)).initialization_script(format!(
            "document.documentElement.dataset.theme = '{name}';"
        ));
    }
    let window = builder.build()?;
    let (handle, channel) = (window.clone(), channel.clone());
    // Closing the window keeps hark running in the tray: the window hides
    // and the app hears of it.
    window.on_window_event(move |event| {
        if let tauri::WindowEvent::CloseRequested { api, .. } = event {
            api.prevent_close();
            let _ = handle.hide();
            channel.send(&FromWindow::Closed);
        }
    });
    Ok(())
}

/// Shows `view` as the app asked: titled and sized for it, on top when it
/// is the modal, focused. `changed`: the page is told to draw it.
fn show(app: &AppHandle, view: View, title: &str, size: LogicalSize<f64>, changed: bool) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    if changed {
        let _ = window.set_title(title);
        let _ = window.set_size(size);
        let _ = window.set_always_on_top(view == View::Modal);
        let _ = app.emit_to(LABEL, VIEW_CHANGED, view);
    }
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}

fn hide(app: &AppHandle) {
    if let Some(window) = app.get_webview_window(LABEL) {
        let _ = window.hide();
    }
}
