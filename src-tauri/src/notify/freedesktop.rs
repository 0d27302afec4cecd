//! Linux: `org.freedesktop.Notifications` over one session-bus connection
//! (zbus, which notify-rust is built on), opened once, with one stream for
//! the server's `ActionInvoked` and `NotificationClosed` signals.
//! notify-rust opens a connection and parks a thread per notification until
//! the server closes it: with 50 items pending that was 100 more threads.

use std::collections::HashMap;

use futures_util::StreamExt;
use tokio::sync::{OnceCell, mpsc};
use zbus::zvariant::Value;

use super::{Backend, BoxFuture, Event, Note};

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// The session bus, connected on first use.
#[derive(Debug, Default)]
pub struct FreeDesktop {
    bus: OnceCell<zbus::Connection>,
}

impl FreeDesktop {
    async fn bus(&self) -> zbus::Result<&zbus::Connection> {
        self.bus.get_or_try_init(zbus::Connection::session).await
    }

    async fn notify(&self, note: &Note, replaces: u32) -> zbus::Result<u32> {
        // Flattened as the `Notify` call takes them: key, label, key, label…
        let actions: Vec<&str> = note
            .actions
            .iter()
            .flat_map(|(key, label)| [key.as_str(), label.as_str()])
            .collect();
        let hints = HashMap::from([("urgency", Value::U8(note.urgency))]);
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
                    note.title.as_str(),
                    note.body.as_str(),
                    actions,
                    hints,
                    -1i32,
                ),
            )
            .await?;
        reply.body().deserialize::<u32>()
    }

    async fn signals(&self) -> zbus::Result<zbus::MessageStream> {
        let bus = self.bus().await?;
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(SERVICE)?
            .path(PATH)?
            .build();
        zbus::MessageStream::for_match_rule(rule, bus, None).await
    }
}

/// A signal of the server's as an event.
fn event(message: &zbus::Message) -> Option<Event> {
    let header = message.header();
    match header.member().map(|m| m.as_str()) {
        Some("ActionInvoked") => {
            let (id, key) = message.body().deserialize::<(u32, String)>().ok()?;
            Some(Event::Action { id, key })
        }
        Some("NotificationClosed") => {
            let (id, _reason) = message.body().deserialize::<(u32, u32)>().ok()?;
            Some(Event::Closed { id })
        }
        _ => None,
    }
}

impl Backend for FreeDesktop {
    fn show<'a>(&'a self, note: &'a Note, replaces: u32) -> BoxFuture<'a, Result<u32, String>> {
        Box::pin(async move { self.notify(note, replaces).await.map_err(|e| e.to_string()) })
    }

    fn close(&self, id: u32) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let bus = self.bus().await.map_err(|e| e.to_string())?;
            bus.call_method(Some(SERVICE), PATH, Some(SERVICE), "CloseNotification", &id)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }

    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, String>> {
        Box::pin(async move {
            let mut signals = self
                .signals()
                .await
                .map_err(|e| format!("session bus: {e}"))?;
            let (sender, events) = mpsc::unbounded_channel();
            tauri::async_runtime::spawn(async move {
                while let Some(message) = signals.next().await {
                    if let Some(event) = message.ok().as_ref().and_then(event)
                        && sender.send(event).is_err()
                    {
                        return;
                    }
                }
            });
            Ok(events)
        })
    }
}
