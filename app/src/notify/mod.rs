//! One desktop notification per new item: title = the header and who asked,
//! body = the question. Clicking it opens the modal on that item; for a
//! single-select question with up to three options, action buttons answer it
//! straight from the notification (where the server supports actions). An
//! item that parks has its notification replaced by one that says so (its
//! agent is paused until the operator answers). A notification is closed
//! when its item settles, however it settled.
//!
//! Which notifications there are is the platform's ([`Backend`]):
//! - Linux: the freedesktop server over the session bus ([`freedesktop`]):
//!   clicks, buttons, closing, replacing; its signals are taken only from
//!   the connection that owns the server's name.
//! - Windows: toasts ([`toast`]): clicks and buttons; a toast cannot be
//!   closed or replaced from here, so a settled item's toast stays until it
//!   is dismissed (clicked, it does nothing then).
//! - macOS: UNUserNotificationCenter ([`macos`]): clicks, buttons,
//!   closing; only for an app bundle, and with the user's permission.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hark_core::config::Notifications;
use hark_core::model::attribution::Attribution;
use hark_core::model::ids::ItemId;
use hark_core::model::item::{Item, Surface};
use hark_core::model::resolve::{Pick, Picks};
use hark_core::registry::Reply;
use tokio::sync::mpsc;

use crate::App;

#[cfg(target_os = "linux")]
mod freedesktop;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(windows)]
mod toast;

/// Options a notification can offer as buttons.
const MAX_BUTTONS: usize = 3;
const OPEN: &str = "default";
const PICK: &str = "pick:";

/// A backend's call, on its way.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// One notification, as every backend takes it.
#[derive(Debug, Clone)]
pub struct Note {
    pub title: String,
    pub body: String,
    /// The buttons, key and label; the first is the body's click ("Open").
    pub actions: Vec<(String, String)>,
    /// freedesktop's urgency byte (0 low, 1 normal, 2 critical).
    pub urgency: u8,
}

/// What the operator did with a notification.
#[derive(Debug, Clone)]
pub enum Event {
    /// Clicked it (`key` is [`OPEN`]) or one of its buttons.
    Action { id: u32, key: String },
    /// It went away.
    Closed { id: u32 },
    /// The notification server went (it stopped, or another took its
    /// name), and every notification it showed with it: a new server
    /// counts its ids afresh.
    ServerGone,
}

/// Why a notification could not be shown, taken back, or followed: each
/// platform's own reasons.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The notification server refused the call, or the bus carrying it.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Bus(#[from] zbus::Error),
    /// The server's signals cannot be followed.
    #[cfg(target_os = "linux")]
    #[error("session bus: {0}")]
    SessionBus(zbus::Error),
    #[cfg(any(windows, target_os = "macos"))]
    #[error("the notifications' events are followed already")]
    Followed,
    #[cfg(target_os = "macos")]
    #[error("macOS gives notifications only to an app bundle")]
    NoAppBundle,
    #[cfg(windows)]
    #[error(transparent)]
    Toast(#[from] tauri_winrt_notification::Error),
    /// The thread that shows the toast did not come back.
    #[cfg(windows)]
    #[error(transparent)]
    ToastThread(#[from] tokio::task::JoinError),
    #[cfg(windows)]
    #[error("a toast cannot be taken back")]
    ToastStays,
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    #[error("this platform has no notifications in hark yet")]
    Unsupported,
}

/// A platform's notifications.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Shows `note` in place of notification `replaces` (0: none); its id.
    fn show<'a>(&'a self, note: &'a Note, replaces: u32)
    -> BoxFuture<'a, Result<u32, NotifyError>>;
    /// Takes notification `id` off the screen, where the platform can.
    fn close(&self, id: u32) -> BoxFuture<'_, Result<(), NotifyError>>;
    /// The operator's clicks and the closes, for as long as the app runs.
    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, NotifyError>>;
}

/// What a backend keeps whose platform gives its notifications no ids
/// and calls back from threads of its own (Windows, macOS): ids counted
/// here, and the channel its callbacks send the events on.
#[cfg(any(windows, target_os = "macos"))]
#[derive(Debug)]
struct Counted {
    next: std::sync::atomic::AtomicU32,
    sender: mpsc::UnboundedSender<Event>,
    events: Mutex<Option<mpsc::UnboundedReceiver<Event>>>,
}

#[cfg(any(windows, target_os = "macos"))]
impl Default for Counted {
    fn default() -> Counted {
        let (sender, events) = mpsc::unbounded_channel();
        Counted {
            next: std::sync::atomic::AtomicU32::new(1),
            sender,
            events: Mutex::new(Some(events)),
        }
    }
}

#[cfg(any(windows, target_os = "macos"))]
impl Counted {
    /// The next notification's id.
    fn next_id(&self) -> u32 {
        self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The events, to the one listener.
    fn take_events(&self) -> Result<mpsc::UnboundedReceiver<Event>, NotifyError> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or(NotifyError::Followed)
    }
}

/// The platform's backend.
fn backend() -> Box<dyn Backend> {
    #[cfg(target_os = "linux")]
    return Box::new(freedesktop::FreeDesktop::default());
    #[cfg(windows)]
    return Box::new(toast::Toasts::default());
    #[cfg(target_os = "macos")]
    return Box::new(macos::UserNotifications::default());
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    return Box::new(Unsupported);
}

/// No notifications on this platform yet (the BSDs).
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
#[derive(Debug)]
struct Unsupported;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
impl Backend for Unsupported {
    fn show<'a>(
        &'a self,
        _note: &'a Note,
        _replaces: u32,
    ) -> BoxFuture<'a, Result<u32, NotifyError>> {
        Box::pin(async { Err(NotifyError::Unsupported) })
    }

    fn close(&self, _id: u32) -> BoxFuture<'_, Result<(), NotifyError>> {
        Box::pin(async { Ok(()) })
    }

    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, NotifyError>> {
        Box::pin(async { Err(NotifyError::Unsupported) })
    }
}

fn title(item: &Item) -> String {
    let header = &item.request.questions[0].header;
    let who = Attribution::of(&item.asker, &item.session_id, item.run_id.as_ref());
    format!("{header} — {}", who.line)
}

fn body(item: &Item) -> String {
    let questions = &item.request.questions;
    let asked = match questions.len() {
        1 => questions[0].question.clone(),
        n => format!("{} (and {} more)", questions[0].question, n - 1),
    };
    if item.parked_at().is_some() {
        format!("Parked: {asked} — the agent is paused until you answer")
    } else {
        asked
    }
}

/// The action keys and labels (the options as buttons when `buttons` is
/// on and the question is short).
fn actions(item: &Item, buttons: bool) -> Vec<(String, String)> {
    let mut actions = vec![(OPEN.to_owned(), "Open".to_owned())];
    let question = &item.request.questions[0];
    let quick = buttons
        && item.request.questions.len() == 1
        && !question.multi_select
        && question.options.len() <= MAX_BUTTONS;
    if quick {
        for (i, option) in question.options.iter().enumerate() {
            actions.push((format!("{PICK}{i}"), option.label.clone()));
        }
    }
    actions
}

/// The notifications on screen, by server id and by item.
#[derive(Debug, Default)]
struct Shown {
    items: HashMap<u32, Arc<Item>>,
    ids: HashMap<ItemId, u32>,
}

/// The app's notifications: which item each shows, over the platform's
/// backend.
#[derive(Debug)]
pub struct Notifier {
    settings: Notifications,
    backend: Box<dyn Backend>,
    shown: Mutex<Shown>,
}

impl Notifier {
    /// Do-not-disturb is the shell's; the rest of `settings` is applied here.
    pub fn new(settings: Notifications) -> Notifier {
        Notifier {
            settings,
            backend: backend(),
            shown: Mutex::default(),
        }
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Shown> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows the backend's events for as long as the app runs: a click
    /// or button routes to its item, a close forgets it.
    pub async fn listen(self: Arc<Self>, app: App) {
        let mut events = match self.backend.events().await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!("no desktop notifications ({e}); the modal and tray still work");
                return;
            }
        };
        while let Some(event) = events.recv().await {
            match event {
                Event::Action { id, key } => {
                    let item = self.shown().items.get(&id).cloned();
                    if let Some(item) = item {
                        on_action(&app, &item, &key);
                    }
                }
                Event::Closed { id } => {
                    let mut shown = self.shown();
                    if let Some(item) = shown.items.remove(&id) {
                        shown.ids.remove(&item.id);
                    }
                }
                Event::ServerGone => *self.shown() = Shown::default(),
            }
        }
    }

    /// Raises the notification for a new item, or for one that parked (in
    /// place of the one it had).
    pub fn show(self: &Arc<Self>, app: &App, item: &Arc<Item>) {
        let (this, app, item) = (self.clone(), app.clone(), item.clone());
        tokio::spawn(async move {
            let replaces = this.shown().ids.get(&item.id).copied().unwrap_or(0);
            let id = match this.notify(&item, replaces).await {
                Ok(id) => id,
                Err(e) => {
                    tracing::warn!(question_id = %item.id, "no notification: {e}");
                    return;
                }
            };
            tracing::info!(question_id = %item.id, notification_id = id, "notification shown");
            {
                let mut shown = this.shown();
                if replaces != 0 && replaces != id {
                    shown.items.remove(&replaces);
                }
                shown.items.insert(id, item.clone());
                shown.ids.insert(item.id, id);
            }
            // Settled while the call was on its way: close it now.
            if app.shell.registry.get(item.id).is_none() {
                this.settled(item.id);
            }
        });
    }

    /// `replaces`: the id of the notification this one replaces, or 0.
    async fn notify(&self, item: &Item, replaces: u32) -> Result<u32, NotifyError> {
        let note = Note {
            title: title(item),
            body: body(item),
            actions: actions(item, self.settings.buttons),
            urgency: self.settings.urgency.level(),
        };
        self.backend.show(&note, replaces).await
    }

    /// The item settled (answered anywhere, timed out, cancelled): its
    /// notification has nothing left to offer, so it goes.
    pub fn settled(self: &Arc<Self>, item: ItemId) {
        let id = {
            let mut shown = self.shown();
            let Some(id) = shown.ids.remove(&item) else {
                return;
            };
            shown.items.remove(&id);
            id
        };
        let this = self.clone();
        tokio::spawn(async move {
            match this.backend.close(id).await {
                Ok(()) => {
                    tracing::info!(question_id = %item, notification_id = id, "notification closed")
                }
                Err(e) => tracing::debug!(notification_id = id, "notification not closed: {e}"),
            }
        });
    }
}

fn on_action(app: &App, item: &Item, action: &str) {
    let shell = &app.shell;
    tracing::info!(question_id = %item.id, action, "notification action");
    if let Some(index) = action
        .strip_prefix(PICK)
        .and_then(|i| i.parse::<usize>().ok())
    {
        let question = &item.request.questions[0];
        let Some(option) = question.options.get(index) else {
            return;
        };
        // An approval's buttons are verdicts (an external effect offers two).
        let picks = Picks::from([(question.question.clone(), Pick::Label(option.label.clone()))]);
        let Some(reply) = Reply::from_picks(item, picks) else {
            return;
        };
        // Replies are decided on the team's hub when there is one: not here,
        // on the event loop.
        let registry = shell.registry.clone();
        let id = item.id;
        tokio::spawn(async move {
            if let Err(e) = registry.reply(id, reply, Surface::Notification).await {
                tracing::info!(question_id = %id, "notification answer not taken: {e}");
            }
        });
    } else if shell.registry.get(item.id).is_some() {
        // The body or "Open": show the modal on this item.
        shell.open_item(app, item.id);
    }
}
