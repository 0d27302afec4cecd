//! One desktop notification per new item: title = the header and who asked,
//! body = the question. Clicking it opens the modal on that item; for a
//! single-select question with up to three options, action buttons answer it
//! straight from the notification (where the server supports actions). An
//! item that parks has its notification replaced by one that says so (its
//! agent is paused until the operator answers). A notification is closed
//! when its item settles, however it settled.
//!
//! The calls go to `org.freedesktop.Notifications` over one session-bus
//! connection (zbus, which notify-rust is built on), opened once, with one
//! stream for the server's `ActionInvoked` and `NotificationClosed` signals.
//! notify-rust opens a connection and parks a thread per notification until
//! the server closes it: with 50 items pending that was 100 more threads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use hark_core::config::Notifications;
use hark_core::model::attribution::Attribution;
use hark_core::model::ids::ItemId;
use hark_core::model::item::{Item, Surface};
use hark_core::model::resolve::{Pick, Picks};
use hark_core::registry::Reply;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::OnceCell;
use zbus::zvariant::Value;

use crate::shell::Shell;

/// Options a notification can offer as buttons.
const MAX_BUTTONS: usize = 3;
const OPEN: &str = "default";
const PICK: &str = "pick:";

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

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

/// The action keys and labels, flattened as the `Notify` call takes them
/// (the options as buttons when `buttons` is on and the question is short).
fn actions(item: &Item, buttons: bool) -> Vec<String> {
    let mut actions = vec![OPEN.to_owned(), "Open".to_owned()];
    let question = &item.request.questions[0];
    let quick = buttons
        && item.request.questions.len() == 1
        && !question.multi_select
        && question.options.len() <= MAX_BUTTONS;
    if quick {
        for (i, option) in question.options.iter().enumerate() {
            actions.push(format!("{PICK}{i}"));
            actions.push(option.label.clone());
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

/// The app's notifications: one bus connection, one signal stream.
#[derive(Debug)]
pub struct Notifier {
    settings: Notifications,
    bus: OnceCell<zbus::Connection>,
    shown: Mutex<Shown>,
}

impl Notifier {
    /// Do-not-disturb is the shell's; the rest of `settings` is applied here.
    pub fn new(settings: Notifications) -> Notifier {
        Notifier {
            settings,
            bus: OnceCell::new(),
            shown: Mutex::default(),
        }
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Shown> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn bus(&self) -> zbus::Result<&zbus::Connection> {
        self.bus.get_or_try_init(zbus::Connection::session).await
    }

    /// Follows the notification server's signals for as long as the app
    /// runs: a click or button routes to its item, a close forgets it.
    pub async fn listen<R: Runtime>(self: Arc<Self>, app: AppHandle<R>) {
        let signals = async {
            let bus = self.bus().await?;
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .interface(SERVICE)?
                .path(PATH)?
                .build();
            zbus::MessageStream::for_match_rule(rule, bus, None).await
        };
        let mut signals = match signals.await {
            Ok(signals) => signals,
            Err(e) => {
                tracing::warn!(
                    "no desktop notifications (session bus: {e}); the modal and tray still work"
                );
                return;
            }
        };
        while let Some(message) = signals.next().await {
            let Ok(message) = message else { continue };
            let header = message.header();
            match header.member().map(|m| m.as_str()) {
                Some("ActionInvoked") => {
                    let Ok((id, action)) = message.body().deserialize::<(u32, String)>() else {
                        continue;
                    };
                    let item = self.shown().items.get(&id).cloned();
                    if let Some(item) = item {
                        on_action(&app, &item, &action);
                    }
                }
                Some("NotificationClosed") => {
                    if let Ok((id, _reason)) = message.body().deserialize::<(u32, u32)>() {
                        let mut shown = self.shown();
                        if let Some(item) = shown.items.remove(&id) {
                            shown.ids.remove(&item.id);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Raises the notification for a new item, or for one that parked (in
    /// place of the one it had).
    pub fn show<R: Runtime>(self: &Arc<Self>, app: &AppHandle<R>, item: &Arc<Item>) {
        let (this, app, item) = (self.clone(), app.clone(), item.clone());
        tauri::async_runtime::spawn(async move {
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
            if app.state::<Arc<Shell>>().registry.get(item.id).is_none() {
                this.settled(item.id);
            }
        });
    }

    /// `replaces`: the server's id of the notification this one replaces, or 0.
    async fn notify(&self, item: &Item, replaces: u32) -> zbus::Result<u32> {
        let actions = actions(item, self.settings.buttons);
        let actions: Vec<&str> = actions.iter().map(String::as_str).collect();
        let hints = HashMap::from([("urgency", Value::U8(self.settings.urgency.level()))]);
        let reply = self
            .bus()
            .await?
            .call_method(
                Some(SERVICE),
                PATH,
                Some(SERVICE),
                "Notify",
                &(
                    "hark",
                    replaces,
                    "",
                    title(item),
                    body(item),
                    actions,
                    hints,
                    -1i32,
                ),
            )
            .await?;
        reply.body().deserialize::<u32>()
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
        tauri::async_runtime::spawn(async move {
            let closed = async {
                this.bus()
                    .await?
                    .call_method(Some(SERVICE), PATH, Some(SERVICE), "CloseNotification", &id)
                    .await
            };
            match closed.await {
                Ok(_) => {
                    tracing::info!(question_id = %item, notification_id = id, "notification closed")
                }
                Err(e) => tracing::debug!(notification_id = id, "notification not closed: {e}"),
            }
        });
    }
}

fn on_action<R: Runtime>(app: &AppHandle<R>, item: &Item, action: &str) {
    let shell = app.state::<Arc<Shell>>();
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
        if let Err(e) = shell.registry.reply(item.id, reply, Surface::Notification) {
            tracing::info!(question_id = %item.id, "notification answer not taken: {e}");
        }
    } else if shell.registry.get(item.id).is_some() {
        // The body or "Open": show the modal on this item.
        shell.open_item(app, item.id);
    }
}
