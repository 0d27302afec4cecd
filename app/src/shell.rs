//! The shell's state: the core's registry plus what only the desktop has
//! (do-not-disturb, the item the modal should show, the way to quit and
//! whether the window asks about it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hark_core::daemon::dispatcher::Dispatcher;
use hark_core::model::ids::ItemId;
use hark_core::registry::Registry;
use tokio::sync::{Notify, oneshot};

use crate::App;
use crate::windows::{self, View};

#[derive(Debug)]
pub struct Shell {
    pub registry: Registry,
    /// Starts the runs dispatched from the inbox window.
    pub dispatcher: Dispatcher,
    /// Silences notifications (and the modal popping up); the inbox still fills.
    do_not_disturb: AtomicBool,
    /// The item the modal should show first (a notification or tray click).
    focus: Mutex<Option<ItemId>>,
    /// Tells the bridge to stop, cancelling every pending item.
    stop: Arc<Notify>,
    /// Completes when the bridge has delivered those cancellations.
    stopped: Mutex<Option<oneshot::Receiver<()>>>,
    /// The tray's Quit waits for the operator's word in the window.
    quit_asked: AtomicBool,
}

impl Shell {
    pub fn new(
        registry: Registry,
        dispatcher: Dispatcher,
        do_not_disturb: bool,
        stop: Arc<Notify>,
        stopped: oneshot::Receiver<()>,
    ) -> Shell {
        Shell {
            registry,
            dispatcher,
            do_not_disturb: AtomicBool::new(do_not_disturb),
            focus: Mutex::new(None),
            stop,
            stopped: Mutex::new(Some(stopped)),
            quit_asked: AtomicBool::new(false),
        }
    }

    pub fn do_not_disturb(&self) -> bool {
        self.do_not_disturb.load(Ordering::Relaxed)
    }

    pub fn set_do_not_disturb(&self, on: bool) {
        self.do_not_disturb.store(on, Ordering::Relaxed);
        tracing::info!(on, "do not disturb");
    }

    pub fn focus(&self) -> Option<ItemId> {
        *self.focus.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the modal on `id`.
    pub fn open_item(&self, app: &App, id: ItemId) {
        *self.focus.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
        windows::show(app, View::Modal);
        app.inbox_changed();
    }

    /// The tray's Quit while items are pending: the inbox asks first.
    /// Quitting cancels every pending item, and the tray's menu is not the
    /// operator's alone (see [`crate::tray`]), so that is done only from
    /// hark's own window ([`crate::ipc::quit`]).
    pub fn ask_to_quit(&self, app: &App) {
        self.quit_asked.store(true, Ordering::Relaxed);
        tracing::info!(pending = self.registry.pending().len(), "quit asked");
        windows::show(app, View::Inbox);
        app.inbox_changed();
    }

    /// Whether the inbox asks about quitting.
    pub fn quit_asked(&self) -> bool {
        self.quit_asked.load(Ordering::Relaxed)
    }

    /// The operator chose to keep running.
    pub fn keep_running(&self) {
        self.quit_asked.store(false, Ordering::Relaxed);
        tracing::info!("quit declined");
    }

    /// Quits: every pending item is settled as cancelled, so each waiting
    /// agent gets its error at once, then the app exits.
    pub fn quit(&self, app: &App) {
        tracing::info!("quitting: cancelling every pending item");
        self.stop.notify_one();
        let stopped = self
            .stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let app = app.clone();
        app.runtime.clone().spawn(async move {
            if let Some(stopped) = stopped {
                let _ = stopped.await;
            }
            app.windows.end().await;
            app.exit();
        });
    }
}
