//! The app's two windows, by typed id: the question modal and the inbox.

use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindow, WebviewWindowBuilder};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowId {
    /// One modal for every pending item, in turn.
    Modal,
    /// Pending items, then the history.
    Inbox,
}

impl WindowId {
    pub fn label(self) -> &'static str {
        match self {
            WindowId::Modal => "modal",
            WindowId::Inbox => "inbox",
        }
    }

    fn page(self) -> &'static str {
        match self {
            WindowId::Modal => "index.html#modal",
            WindowId::Inbox => "index.html#inbox",
        }
    }

    fn title(self) -> &'static str {
        match self {
            WindowId::Modal => "hark — an agent asks",
            WindowId::Inbox => "hark — inbox",
        }
    }

    fn size(self) -> (f64, f64) {
        match self {
            WindowId::Modal => (600.0, 560.0),
            WindowId::Inbox => (820.0, 600.0),
        }
    }
}

/// The window, created hidden on first use.
fn get_or_create<R: Runtime>(app: &AppHandle<R>, id: WindowId) -> tauri::Result<WebviewWindow<R>> {
    if let Some(window) = app.get_webview_window(id.label()) {
        return Ok(window);
    }
    let (width, height) = id.size();
    let window = WebviewWindowBuilder::new(app, id.label(), WebviewUrl::App(id.page().into()))
        .title(id.title())
        .inner_size(width, height)
        .always_on_top(id == WindowId::Modal)
        .visible(false)
        .build()?;
    let handle = window.clone();
    // Closing a window keeps hark running in the tray.
    window.on_window_event(move |event| {
        if let tauri::WindowEvent::CloseRequested { api, .. } = event {
            api.prevent_close();
            let _ = handle.hide();
        }
    });
    Ok(window)
}

/// Shows the window, on top and focused.
pub fn show<R: Runtime>(app: &AppHandle<R>, id: WindowId) {
    match get_or_create(app, id) {
        Ok(window) => {
            let _ = window.show();
            let _ = window.unminimize();
            let _ = window.set_focus();
            tracing::info!(window = id.label(), "window shown");
        }
        Err(e) => tracing::error!("cannot open the {} window: {e}", id.label()),
    }
}

pub fn hide<R: Runtime>(app: &AppHandle<R>, id: WindowId) {
    if let Some(window) = app.get_webview_window(id.label()) {
        let _ = window.hide();
    }
}

/// Creates the windows up front (hidden), so the first question draws fast.
/// (Each has its own WebKit web process. Sharing one through a related view
/// saves ~50 MB, but WebKit's automation then gives both windows one
/// handle, and a window created later is invisible to it: the desktop tests
/// could no longer reach the inbox.)
pub fn prepare<R: Runtime>(app: &AppHandle<R>) {
    for id in [WindowId::Modal, WindowId::Inbox] {
        if let Err(e) = get_or_create(app, id) {
            tracing::error!("cannot create the {} window: {e}", id.label());
        }
    }
}
