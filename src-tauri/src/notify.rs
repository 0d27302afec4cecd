//! One desktop notification per new item: title = the header and who asked,
//! body = the question. Clicking it opens the modal on that item; for a
//! single-select question with up to three options, action buttons answer it
//! straight from the notification (where the server supports actions).

use std::sync::Arc;

use hark_core::item::Item;
use hark_core::registry::Reply;
use hark_core::resolve::{Pick, Picks};
use tauri::{AppHandle, Manager, Runtime};

use crate::shell::Shell;

/// Options a notification can offer as buttons.
const MAX_BUTTONS: usize = 3;
const OPEN: &str = "default";
const PICK: &str = "pick:";

fn title(item: &Item) -> String {
    let header = &item.request.questions[0].header;
    let who = item
        .asker
        .command
        .as_deref()
        .and_then(|c| c.split_whitespace().next())
        .and_then(|c| c.rsplit('/').next())
        .unwrap_or("an agent");
    format!(
        "{header} — {who} asks (session {})",
        short(&item.session_id)
    )
}

fn short(session: &str) -> &str {
    session.get(..8).unwrap_or(session)
}

fn body(item: &Item) -> String {
    let questions = &item.request.questions;
    match questions.len() {
        1 => questions[0].question.clone(),
        n => format!("{} (and {} more)", questions[0].question, n - 1),
    }
}

/// Raises the notification on its own thread and waits there for the click.
pub fn show<R: Runtime>(app: &AppHandle<R>, item: &Arc<Item>) {
    let app = app.clone();
    let item = item.clone();
    std::thread::spawn(move || {
        let mut note = notify_rust::Notification::new();
        note.appname("hark")
            .summary(&title(&item))
            .body(&body(&item))
            .action(OPEN, "Open");
        let question = &item.request.questions[0];
        let quick = item.request.questions.len() == 1
            && !question.multi_select
            && question.options.len() <= MAX_BUTTONS;
        if quick {
            for (i, option) in question.options.iter().enumerate() {
                note.action(&format!("{PICK}{i}"), &option.label);
            }
        }
        let handle = match note.show() {
            Ok(handle) => handle,
            Err(e) => {
                tracing::warn!(question_id = %item.id, "no notification: {e}");
                return;
            }
        };
        tracing::info!(question_id = %item.id, notification_id = handle.id(), "notification shown");
        handle.wait_for_action(|action| on_action(&app, &item, action));
    });
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
        let picks = Picks::from([(question.question.clone(), Pick::Label(option.label.clone()))]);
        if let Err(e) = shell
            .registry
            .reply(item.id, Reply::Answer(picks), "notification")
        {
            tracing::info!(question_id = %item.id, "notification answer not taken: {e}");
        }
    } else if action != "__closed" {
        // The body or "Open": show the modal on this item.
        if shell.registry.get(item.id).is_some() {
            shell.open_item(app, item.id);
        }
    }
}
