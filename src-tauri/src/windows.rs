//! The app's one window, which shows one of two views: the question modal
//! or the inbox.
//!
//! One window, not two: every WebKit webview of its own costs a web process
//! (~50–90 MB each here), and the app's whole footprint is a target. The
//! window takes each view's title, size and stacking: the modal is small and
//! on top; the inbox larger and ordinary. A question arriving while the
//! inbox is open takes the window over, and hands it back to the inbox once
//! nothing is waiting.

use std::sync::Mutex;

use serde::Serialize;
use tauri::{
    AppHandle, Emitter, LogicalSize, Manager, Runtime, WebviewUrl, WebviewWindow,
    WebviewWindowBuilder,
};

/// The window's label (and its capability's).
pub const LABEL: &str = "main";

/// Emitted to the window when its view changes (the page then redraws).
pub const VIEW_CHANGED: &str = "view-changed";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// One modal for every pending item, in turn.
    Modal,
    /// Pending items, then the history, the runs and the dispatch form.
    Inbox,
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

#[derive(Debug, Default, Clone, Copy)]
struct ShownState {
    /// The view on screen; `None` while the window is hidden.
    view: Option<View>,
    /// The modal took the window over from the open inbox.
    back_to_inbox: bool,
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

/// Creates the window (hidden) up front, so the first question draws fast.
pub fn prepare<R: Runtime>(app: &AppHandle<R>) {
    app.manage(Shown::default());
    if let Err(e) = window(app) {
        tracing::error!("cannot create the window: {e}");
    }
}

/// The window, created hidden on first use.
fn window<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    if let Some(window) = app.get_webview_window(LABEL) {
        return Ok(window);
    }
    let size = View::Modal.size();
    let window = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App("index.html".into()))
        .title(View::Modal.title())
        .inner_size(size.width, size.height)
        .visible(false)
        .build()?;
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

fn hide_window<R: Runtime>(window: &WebviewWindow<R>) {
    *window.state::<Shown>().state() = ShownState::default();
    let _ = window.hide();
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
