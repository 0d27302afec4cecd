//! The app's one window, which shows one of two views: the question modal
//! or the inbox.
//!
//! One window, not two: every WebKit webview of its own costs a web process
//! (~50–90 MB each here), and the app's whole footprint is a target. The
//! window takes each view's title, size and stacking: the modal is small and
//! on top; the inbox larger and ordinary. A question arriving while the
//! inbox is open takes the window over, and hands it back to the inbox once
//! nothing is waiting.
//!
//! A window nobody sees is not kept: once it has been hidden with nothing
//! pending for [`Settings::release_after`] (the config's `window_release_secs`), it is
//! destroyed, and WebKit's web process (most of the app's memory) goes with
//! it; the next question or click builds it again. The wait keeps a burst
//! of questions (an agent asking one after another) from paying for a new
//! web process each. (Tauri keeps WebKit's network process for the app's
//! lifetime on Linux, so that one stays.)

use std::sync::Mutex;

use hark_core::registry::Registry;
use serde::Serialize;
use tauri::{
    AppHandle, Emitter, LogicalSize, Manager, Runtime, WebviewUrl, WebviewWindow,
    WebviewWindowBuilder,
};

/// The window's label (and its capability's).
pub const LABEL: &str = "main";

/// Emitted to the window when its view changes (the page then redraws).
pub const VIEW_CHANGED: &str = "view-changed";

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

    fn size(self) -> LogicalSize<f64> {
        match self {
            View::Modal => LogicalSize::new(600.0, 560.0),
            View::Inbox => LogicalSize::new(820.0, 600.0),
        }
    }
}

/// What the window shows; kept as app state.
#[derive(Debug, Default)]
pub struct Shown {
    inner: Mutex<ShownState>,
}

/// The config's say over the window; app state.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long a hidden window with nothing pending is kept.
    pub release_after: std::time::Duration,
    /// Its colours.
    pub theme: hark_core::config::Theme,
}

#[derive(Debug, Default, Clone, Copy)]
struct ShownState {
    /// The view on screen; `None` while the window is hidden.
    view: Option<View>,
    /// The modal took the window over from the open inbox.
    back_to_inbox: bool,
    /// Counts hides and shows: a release waits for the hide it follows
    /// to be the last thing that happened.
    changes: u64,
}

impl Shown {
    fn state(&self) -> std::sync::MutexGuard<'_, ShownState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The view on screen, if the window is shown.
    pub fn view(&self) -> Option<View> {
        self.state().view
    }
}

/// Sets up the window's state and builds the window, hidden (released
/// after [`Settings::release_after`] with nothing pending, and built again
/// on next use).
pub fn prepare<R: Runtime>(app: &AppHandle<R>) {
    app.manage(Shown::default());
    // Built hidden at start, so that the first question of the day draws as
    // fast as the next; released like any hidden window once nothing has
    // waited for a while (kept under WebDriver).
    match window(app) {
        Ok(window) => hide_window(&window),
        Err(e) => tracing::error!("cannot create the window: {e}"),
    }
}

/// Whether WebDriver drives the app (tauri-driver says so): its webview is
/// then kept for the driver's session, never released.
fn automated() -> bool {
    std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true")
}

/// The window, created hidden on first use.
fn window<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    if let Some(window) = app.get_webview_window(LABEL) {
        return Ok(window);
    }
    let size = View::Modal.size();
    let mut builder = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App("index.html".into()))
        .title(View::Modal.title())
        .inner_size(size.width, size.height)
        // Ctrl+= and Ctrl+- zoom the page: the desktop's text scaling does
        // not reach WebKitGTK's pages.
        .zoom_hotkeys_enabled(true)
        .visible(false);
    let theme = app
        .try_state::<Settings>()
        .and_then(|s| chosen_theme(s.theme));
    if let Some((theme, name)) = theme {
        // The page's colours follow `data-theme` over the system's
        // preference (WebKitGTK does not take the window's for it).
        builder = builder.theme(Some(theme)).initialization_script(format!(
            "document.documentElement.dataset.theme = '{name}';"
        ));
    }
    let window = builder.build()?;
    let handle = window.clone();
    // Closing the window keeps hark running in the tray.
    window.on_window_event(move |event| {
        if let tauri::WindowEvent::CloseRequested { api, .. } = event {
            api.prevent_close();
            hide_window(&handle);
        }
    });
    Ok(window)
}

/// The theme the config chose over the desktop's, if it chose one, and
/// its name in the page.
fn chosen_theme(theme: hark_core::config::Theme) -> Option<(tauri::Theme, &'static str)> {
    use hark_core::config::Theme;
    match theme {
        Theme::System => None,
        Theme::Light => Some((tauri::Theme::Light, "light")),
        Theme::Dark => Some((tauri::Theme::Dark, "dark")),
    }
}

/// Hides the window, and releases it (destroyed, its web process with it)
/// once it has stayed hidden with nothing pending for [`Settings::release_after`].
fn hide_window<R: Runtime>(window: &WebviewWindow<R>) {
    let hidden = {
        let shown = window.state::<Shown>();
        let mut state = shown.state();
        *state = ShownState {
            changes: state.changes + 1,
            ..ShownState::default()
        };
        state.changes
    };
    let _ = window.hide();
    let Some(after) = window.try_state::<Settings>().map(|s| s.release_after) else {
        return;
    };
    if automated() {
        return;
    }
    let window = window.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(after).await;
        let still_hidden = window.state::<Shown>().state().changes == hidden;
        let idle = window
            .try_state::<Registry>()
            .is_some_and(|registry| registry.pending().is_empty());
        if !(still_hidden && idle) {
            return;
        }
        match window.destroy() {
            Ok(()) => {
                let network = end_network_process();
                tracing::info!(network_process_ended = network, "window released");
            }
            Err(e) => tracing::warn!("cannot release the window: {e}"),
        }
        // Shown again while it went: build it again for what was shown.
        let state = *window.state::<Shown>().state();
        if state.changes != hidden
            && let Some(view) = state.view
        {
            show(window.app_handle(), view);
        }
    });
}

/// Shows `view`, on top (the modal) and focused.
pub fn show<R: Runtime>(app: &AppHandle<R>, view: View) {
    let window = match window(app) {
        Ok(window) => window,
        Err(e) => {
            tracing::error!("cannot open the window: {e}");
            return;
        }
    };
    let before = {
        let shown = app.state::<Shown>();
        let mut state = shown.state();
        let before = state.view;
        state.back_to_inbox = match view {
            View::Modal => before == Some(View::Inbox) || state.back_to_inbox,
            View::Inbox => false,
        };
        state.view = Some(view);
        state.changes += 1;
        before
    };
    if before != Some(view) {
        let _ = window.set_title(view.title());
        let _ = window.set_size(view.size());
        let _ = window.set_always_on_top(view == View::Modal);
        let _ = app.emit_to(LABEL, VIEW_CHANGED, view);
    }
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
    tracing::info!(window = view.label(), "window shown");
}

/// Nothing is waiting any more: the modal gives the window back to the
/// inbox it took it from, or hides.
pub fn modal_done<R: Runtime>(app: &AppHandle<R>) {
    let state = *app.state::<Shown>().state();
    if state.view != Some(View::Modal) {
        return;
    }
    if state.back_to_inbox {
        show(app, View::Inbox);
    } else if let Some(window) = app.get_webview_window(LABEL) {
        hide_window(&window);
    }
}

/// Ends WebKit's network process, which WebKit keeps for the app's
/// lifetime even with no webview (and Tauri keeps its context on Linux):
/// the next webview has WebKit start a new one. Whether one was ended.
#[cfg(target_os = "linux")]
fn end_network_process() -> bool {
    let mut ended = false;
    for pid in hark_core::files::children_named(std::process::id(), "WebKitNetworkPr") {
        if let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            ended |= rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok();
        }
    }
    ended
}

#[cfg(not(target_os = "linux"))]
fn end_network_process() -> bool {
    false
}
