//! What another program on the session bus can do to the app's questions:
//! nothing that answers or cancels one. Each test forges what any client of
//! the bus can send, as an agent's tool could — the notification server's
//! signals, a tray host's click on the exported menu — and checks that the
//! question is still pending in the store, and still answered as the
//! operator answers it. A forgery is judged before the click that follows
//! it (the app reads the bus in order), so the tests wait on that click,
//! never on time.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use zbus::Connection;
use zbus::names::BusName;
use zbus::zvariant::{DynamicType, OwnedObjectPath, OwnedValue};

use crate::desktop::ask_from_agent;
use crate::support::desktop::Desktop;
use crate::support::*;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Where libayatana-appindicator exports the tray's StatusNotifierItem.
const ITEMS: &str = "/org/ayatana/NotificationItem";

/// A client of the desktop's session bus of its own, as any program of
/// the user's can be.
async fn bystander(desktop: &Desktop) -> Connection {
    zbus::connection::Builder::address(desktop.bus_address())
        .unwrap()
        // A connection that serves nothing may never answer a call.
        .method_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap()
}

/// Sends the notification server's signal `member` (body `body(id)`) as an
/// attacker would: for the first ids (they are small counters), to every
/// client and to the app's connection alone; then tells the app, as if the
/// bus said it, that the forger owns the server's name now, and sends
/// them again.
async fn forge<B>(forger: &Connection, app: &str, member: &str, body: impl Fn(u32) -> B)
where
    B: serde::Serialize + DynamicType,
{
    let app = BusName::try_from(app).unwrap();
    let signal = |to: Option<BusName<'static>>, id| {
        let body = body(id);
        async move {
            forger
                .emit_signal(to, PATH, SERVICE, member, &body)
                .await
                .unwrap();
        }
    };
    for id in 1..=5 {
        signal(None, id).await;
        signal(Some(app.to_owned()), id).await;
    }
    let me = forger.unique_name().unwrap().to_string();
    forger
        .emit_signal(
            Some(&app),
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "NameOwnerChanged",
            &(SERVICE, "", me.as_str()),
        )
        .await
        .unwrap();
    for id in 1..=5 {
        signal(Some(app.to_owned()), id).await;
    }
}

/// Waits until the app took the server's click on `action` of item `id`
/// (all that reached it before has been judged by then), or the item
/// settled (what a forgery taken does).
fn wait_for_click_or_settled(desktop: &Desktop, id: &str, action: &str) {
    let settled = [hark_core::trace::ANSWERED, hark_core::trace::UNANSWERED];
    desktop.log.wait_until(
        &format!("the app to take the click on {action:?}, or the item to settle"),
        |lines| {
            lines.iter().find_map(|l| {
                let event: Value = serde_json::from_str(&l.text).ok()?;
                let message = event["message"].as_str()?;
                let clicked = message == "notification action" && event["action"] == action;
                (event["question_id"] == id && (clicked || settled.contains(&message)))
                    .then_some(())
            })
        },
    );
}

/// Item `id` as the store lists it (`hark inbox --all --json`).
fn stored(desktop: &Desktop, id: &str) -> Value {
    let out = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&out.stdout).unwrap();
    items
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the store: {items}"))
        .clone()
}

fn assert_pending(desktop: &Desktop, id: &str) {
    let item = stored(desktop, id);
    assert_eq!(item["state"], "pending", "{item}");
    assert_eq!(item["outcome"], Value::Null, "{item}");
}

/// The question the tests ask: one short single-select question, so its
/// notification offers its options as buttons (`pick:0`, `pick:1`).
async fn asked(
    desktop: &Desktop,
    session: &str,
) -> (
    Agent,
    tokio::task::JoinHandle<rmcp::model::CallToolResult>,
    String,
    u64,
) {
    let (agent, call) = ask_from_agent(desktop, session, questions(&[db()])).await;
    let id = desktop.log.question_id(session);
    let notify = desktop.wait_for_notify("Which database?");
    assert!(
        notify.iter().any(|l| l.contains("\"pick:1\"")),
        "{notify:?}"
    );
    let notification = desktop.notification_id(&id);
    assert!(
        notification <= 5,
        "the forgeries try ids 1 to 5; this one is {notification}"
    );
    (agent, call, id, notification)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_action_answers_nothing_and_the_servers_own_click_still_does() {
    let desktop = Desktop::start().await;
    let (agent, call, id, notification) = asked(&desktop, "forged-action").await;
    let forger = bystander(&desktop).await;
    forge(
        &forger,
        &desktop.notifying_connection(),
        "ActionInvoked",
        |n| (n, "pick:1"),
    )
    .await;

    // The operator opens it from dunst: after the forgeries, on the same bus.
    desktop.click_action(notification, "default");
    wait_for_click_or_settled(&desktop, &id, "default");
    assert_pending(&desktop, &id);

    // A button clicked in dunst answers it, and the agent gets that answer.
    desktop.click_action(notification, "pick:0");
    assert_eq!(
        text(&call.await.unwrap()),
        r#"{"answers":{"Which database?":"Postgres (Recommended)"}}"#
    );
    assert_eq!(stored(&desktop, &id)["replied_by"], "notification");
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_close_leaves_the_notification_to_answer_from() {
    let desktop = Desktop::start().await;
    let (agent, call, id, notification) = asked(&desktop, "forged-close").await;
    let forger = bystander(&desktop).await;
    // Closed, dismissed by the user (reason 2).
    forge(
        &forger,
        &desktop.notifying_connection(),
        "NotificationClosed",
        |n| (n, 2u32),
    )
    .await;
    assert_pending(&desktop, &id);

    // Had the app taken a close, it would have forgotten the notification,
    // and this click would answer nothing.
    desktop.click_action(notification, "pick:1");
    let result = tokio::time::timeout(hark_harness::PATIENCE, call)
        .await
        .expect("the button in dunst still answers")
        .unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);
    assert_eq!(stored(&desktop, &id)["replied_by"], "notification");
    // It settled: the app takes down the notification it still knows.
    desktop.wait_for_close(notification);
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

/// The tray menu the app exports on the bus (libdbusmenu, behind its
/// StatusNotifierItem's `Menu`): the connection serving it and its path.
/// Found as any program can find it: among the connections of the app's
/// process, the one with a StatusNotifierItem.
async fn exported_menu(bus: &Connection, app_pid: u32) -> (String, OwnedObjectPath) {
    let dbus = zbus::fdo::DBusProxy::new(bus).await.unwrap();
    for name in dbus.list_names().await.unwrap() {
        if !name.starts_with(':')
            || dbus
                .get_connection_unix_process_id(name.as_ref())
                .await
                .ok()
                != Some(app_pid)
        {
            continue;
        }
        let Ok(reply) = bus
            .call_method(
                Some(name.as_str()),
                ITEMS,
                Some("org.freedesktop.DBus.Introspectable"),
                "Introspect",
                &(),
            )
            .await
        else {
            continue;
        };
        let xml: String = reply.body().deserialize().unwrap();
        let Some(item) = xml
            .split("<node name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let reply = bus
            .call_method(
                Some(name.as_str()),
                format!("{ITEMS}/{item}").as_str(),
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &("org.kde.StatusNotifierItem", "Menu"),
            )
            .await
            .unwrap();
        let menu: OwnedValue = reply.body().deserialize().unwrap();
        return (name.to_string(), OwnedObjectPath::try_from(menu).unwrap());
    }
    panic!("the app (pid {app_pid}) exports no StatusNotifierItem");
}

/// A dbusmenu layout: an entry's id, its properties, its children.
type Layout = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

/// The id of the exported menu's entry labelled `label`.
async fn entry(bus: &Connection, (name, menu): &(String, OwnedObjectPath), label: &str) -> i32 {
    let reply = bus
        .call_method(
            Some(name.as_str()),
            menu,
            Some("com.canonical.dbusmenu"),
            "GetLayout",
            &(0i32, -1i32, vec!["label"]),
        )
        .await
        .unwrap();
    let (_revision, (_root, _, children)): (u32, Layout) = reply.body().deserialize().unwrap();
    let mut labels = Vec::new();
    for child in children {
        let (id, properties, _): Layout = child.try_into().unwrap();
        let shown = properties
            .get("label")
            .and_then(|l| String::try_from(l.try_clone().unwrap()).ok())
            .unwrap_or_default()
            .replace('_', "");
        if shown == label {
            return id;
        }
        labels.push(shown);
    }
    panic!("no {label:?} in the exported menu: {labels:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_click_on_the_trays_quit_cancels_nothing() {
    let desktop = Desktop::start().await;
    let started = desktop.log.wait_event("desktop app started", &[]);
    let pid = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    let (agent, call) = ask_from_agent(&desktop, "forged-quit", questions(&[db()])).await;
    let id = desktop.log.question_id("forged-quit");
    desktop.log.wait_until("the tray to list it", |lines| {
        lines.iter().find_map(|l| {
            let event: Value = serde_json::from_str(&l.text).ok()?;
            (event["message"] == "tray.updated" && event["pending"] == 1).then_some(())
        })
    });

    // What a tray host sends when Quit is clicked.
    let forger = bystander(&desktop).await;
    let menu = exported_menu(&forger, pid).await;
    let quit = entry(&forger, &menu, "Quit").await;
    forger
        .call_method(
            Some(menu.0.as_str()),
            &menu.1,
            Some("com.canonical.dbusmenu"),
            "Event",
            &(quit, "clicked", zbus::zvariant::Value::I32(0), 0u32),
        )
        .await
        .unwrap();

    // The app asks in its own window instead of quitting.
    let said = desktop.log.wait_for("the app to ask, or to quit", |l| {
        l.contains("\"quit asked\"") || l.contains("quitting: cancelling every pending item")
    });
    assert!(said.contains("\"quit asked\""), "{said}");
    assert_pending(&desktop, &id);
    desktop.view("inbox").await;
    let asks = desktop
        .wait_for("//div[@id='quit-ask' and not(@hidden)]")
        .await
        .text()
        .await
        .unwrap();
    assert!(asks.contains("1 question is waiting"), "{asks}");
    desktop.click("#quit-keep").await;
    desktop.wait_for("//div[@id='quit-ask' and @hidden]").await;

    // Still serving: the question is answered, and its agent gets the answer.
    answer(&desktop.sandbox, &id, "SQLite");
    assert_eq!(
        text(&call.await.unwrap()),
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    agent.cancel().await.unwrap();
    desktop.stop().await;
}
