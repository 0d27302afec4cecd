//! Linux: `org.freedesktop.Notifications` over one session-bus connection
//! (zbus, which notify-rust is built on), opened once, with one stream for
//! the server's `ActionInvoked` and `NotificationClosed` signals.
//! notify-rust opens a connection and parks a thread per notification until
//! the server closes it: with 50 items pending that was 100 more threads.
//!
//! # Whose signals are taken
//! Any client of the session bus may send a signal named `ActionInvoked` on
//! `/org/freedesktop/Notifications`, to everyone or to the app alone, and
//! notification ids are small counters: were every such signal taken, an
//! agent's tool could answer its own question with one `dbus-send`. So the
//! server's signals are taken only from the connection that owns
//! `org.freedesktop.Notifications` now. Its unique name is asked of the bus
//! at the start (`GetNameOwner`) and followed through the bus's
//! `NameOwnerChanged`, itself taken only from the bus (a sender the bus
//! lets no client use), so a restarted server is followed. The owner is
//! named in the match rule, so the bus routes nobody else's broadcasts
//! here, and each message's sender is checked again here
//! ([`Server::next`], [`new_owner`]): a signal addressed to the app is
//! delivered whatever its match rules say (zbus then drops one whose
//! sender is not the rule's unique name, but that is how it dispatches,
//! not what it promises), and the owner may have changed since the rule
//! was made. While nobody owns the name, nothing is taken.
//!
//! What this does not cover: a process that owns the name itself (one
//! that claims it while no server runs, or replaces a server that allows
//! it) is the notification server, and is trusted as one.

use std::collections::HashMap;

use futures_util::StreamExt;
use tokio::sync::{OnceCell, mpsc};
use zbus::message::Type;
use zbus::names::{OwnedUniqueName, UniqueName};
use zbus::zvariant::Value;
use zbus::{Connection, MatchRule, Message, MessageStream};

use super::{Backend, BoxFuture, Event, Note, NotifyError};

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// The bus itself: the sender of its own signals, which no client can be.
const BUS: &str = "org.freedesktop.DBus";

/// The session bus, connected on first use.
#[derive(Debug, Default)]
pub struct FreeDesktop {
    bus: OnceCell<Connection>,
}

impl FreeDesktop {
    async fn bus(&self) -> zbus::Result<&Connection> {
        self.bus.get_or_try_init(Connection::session).await
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
}

/// The connection that owns [`SERVICE`] now, if any.
async fn owner(bus: &Connection) -> zbus::Result<Option<OwnedUniqueName>> {
    let dbus = zbus::fdo::DBusProxy::new(bus).await?;
    match dbus.get_name_owner(SERVICE.try_into()?).await {
        Ok(owner) => Ok(Some(owner)),
        Err(zbus::fdo::Error::NameHasNoOwner(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The bus's `NameOwnerChanged` for [`SERVICE`].
async fn owner_changes(bus: &Connection) -> zbus::Result<MessageStream> {
    let rule = MatchRule::builder()
        .msg_type(Type::Signal)
        .sender(BUS)?
        .path("/org/freedesktop/DBus")?
        .interface(BUS)?
        .member("NameOwnerChanged")?
        .add_arg(SERVICE)?
        .build();
    MessageStream::for_match_rule(rule, bus, None).await
}

/// Who owns [`SERVICE`] after this change (`Some(None)`: nobody), if the
/// bus itself says so: anyone may send a signal by that name.
fn new_owner(message: &Message) -> Option<Option<OwnedUniqueName>> {
    let header = message.header();
    if header.sender().map(UniqueName::as_str) != Some(BUS) {
        tracing::warn!(sender = ?header.sender(), "a NameOwnerChanged not from the bus, ignored");
        return None;
    }
    let body = message.body();
    let (name, _old, new) = body.deserialize::<(&str, &str, &str)>().ok()?;
    // No new owner is an empty string, which is no unique name.
    (name == SERVICE).then(|| UniqueName::try_from(new).ok().map(OwnedUniqueName::from))
}

/// The notification server's signals, from the connection that owns
/// [`SERVICE`] now.
struct Server {
    /// `None` while nobody owns the name: then nothing is taken.
    owner: Option<OwnedUniqueName>,
    /// The owner's signals, as the bus routes them to this connection.
    signals: Option<MessageStream>,
}

impl Server {
    /// Follows `owner`'s signals (none with no owner).
    async fn owned_by(bus: &Connection, owner: Option<OwnedUniqueName>) -> zbus::Result<Server> {
        let Some(name) = &owner else {
            return Ok(Server {
                owner,
                signals: None,
            });
        };
        let rule = MatchRule::builder()
            .msg_type(Type::Signal)
            .sender(name)?
            .interface(SERVICE)?
            .path(PATH)?
            .build();
        let signals = MessageStream::for_match_rule(rule, bus, None).await?;
        Ok(Server {
            owner,
            signals: Some(signals),
        })
    }

    /// The owner's next event; a signal any other connection sent (to this
    /// one alone, which no match rule stops) is dropped. Never ends while
    /// nobody owns the name.
    async fn next(&mut self) -> Option<Event> {
        let Some(signals) = &mut self.signals else {
            return std::future::pending().await;
        };
        while let Some(message) = signals.next().await {
            let Ok(message) = message else { continue };
            let header = message.header();
            if header.sender() != self.owner.as_deref() {
                tracing::warn!(sender = ?header.sender(), member = ?header.member(), "a notification signal not from the notification server, ignored");
                continue;
            }
            if let Some(event) = event(&message) {
                return Some(event);
            }
        }
        None
    }
}

/// A signal of the server's as an event.
fn event(message: &Message) -> Option<Event> {
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

/// Sends the server's events on `sender` until the connection or the
/// listener goes, following the name's owner as it changes.
async fn follow(
    bus: Connection,
    mut owners: MessageStream,
    mut server: Server,
    sender: mpsc::UnboundedSender<Event>,
) {
    loop {
        let event = tokio::select! {
            // A change of owner first: each signal is judged by the owner
            // the bus had named by the time it arrived.
            biased;
            Some(change) = owners.next() => {
                let Some(owner) = change.ok().as_ref().and_then(new_owner) else {
                    continue;
                };
                tracing::info!(owner = ?owner, "notification server changed");
                let gone = server.owner.is_some();
                server = match Server::owned_by(&bus, owner).await {
                    Ok(server) => server,
                    Err(e) => {
                        tracing::warn!("cannot follow the new notification server: {e}");
                        Server { owner: None, signals: None }
                    }
                };
                // Its ids went with it: they mean nothing to the next one.
                if !gone {
                    continue;
                }
                Event::ServerGone
            }
            Some(event) = server.next() => event,
            else => return,
        };
        if sender.send(event).is_err() {
            return;
        }
    }
}

impl Backend for FreeDesktop {
    fn show<'a>(
        &'a self,
        note: &'a Note,
        replaces: u32,
    ) -> BoxFuture<'a, Result<u32, NotifyError>> {
        Box::pin(async move { Ok(self.notify(note, replaces).await?) })
    }

    fn close(&self, id: u32) -> BoxFuture<'_, Result<(), NotifyError>> {
        Box::pin(async move {
            let bus = self.bus().await?;
            bus.call_method(Some(SERVICE), PATH, Some(SERVICE), "CloseNotification", &id)
                .await?;
            Ok(())
        })
    }

    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, NotifyError>> {
        Box::pin(async move {
            let started = async {
                let bus = self.bus().await?.clone();
                // Subscribed before the owner is asked: a change in between is not missed.
                let owners = owner_changes(&bus).await?;
                let server = Server::owned_by(&bus, owner(&bus).await?).await?;
                tracing::info!(owner = ?server.owner, "notification server");
                zbus::Result::Ok((bus, owners, server))
            };
            let (bus, owners, server) = started.await.map_err(NotifyError::SessionBus)?;
            let (sender, events) = mpsc::unbounded_channel();
            tokio::spawn(follow(bus, owners, server, sender));
            Ok(events)
        })
    }
}
