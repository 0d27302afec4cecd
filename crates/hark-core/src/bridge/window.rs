//! What the desktop app and its window process say to each other, one JSON
//! object a line over the window process's standard input and output.
//!
//! The app (tray, notifications, the core) stays resident; the window
//! (the modal and the inbox, a webview) is a process of its own, started
//! when something is to be shown and ended once nothing has waited for a
//! while, so the resident part never loads a web engine. The page's
//! commands cross to the app as [`FromWindow::Call`]s and are answered by
//! [`ToWindow::Reply`]; the app's events cross as [`ToWindow::Emit`]. The
//! channel is the window process's own pipes: nothing else can speak on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bridge::views::View;

/// Emitted to the page when items are added or settled.
pub const INBOX_CHANGED: &str = "inbox-changed";

/// Emitted to the page when its view changes (the page then redraws).
pub const VIEW_CHANGED: &str = "view-changed";

/// Set in a window process's environment when the app starts it ahead of
/// time: it waits until its channel has something before it builds a
/// window (Linux).
pub const AHEAD_ENV: &str = crate::env::WINDOW_DORMANT;

/// From the app to its window process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "to_window", rename_all = "snake_case")]
pub enum ToWindow {
    /// Show the window with this view, sized and titled for it, focused;
    /// on top when it is the modal.
    Show {
        view: View,
        title: String,
        width: f64,
        height: f64,
    },
    /// Hide the window (it stays built until the app ends the process).
    Hide,
    /// Emit this event to the page.
    Emit { event: String, payload: Value },
    /// The answer to the page's call `call`.
    Reply { call: u64, result: CallResult },
}

/// A command's result as the page's promise gets it: resolved with `ok`,
/// or rejected with `error` (`{code, message}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallResult {
    Ok(Value),
    Error(Value),
}

/// From the window process to the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from_window", rename_all = "snake_case")]
pub enum FromWindow {
    /// The page called `command` with these arguments.
    Call {
        call: u64,
        command: String,
        args: Value,
    },
    /// The operator closed the window: it is hidden, and the app is told.
    Closed,
}

/// One message as its line (without the newline).
pub fn line<T: Serialize>(message: &T) -> String {
    // These types always serialize: their maps have string keys.
    serde_json::to_string(message).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_as_one_line_each_and_back() {
        let show = ToWindow::Show {
            view: View::Modal,
            title: "hark — an agent asks".into(),
            width: 600.0,
            height: 560.0,
        };
        let call = FromWindow::Call {
            call: 7,
            command: "inbox".into(),
            args: serde_json::json!({"pendingOnly": true}),
        };
        let reply = ToWindow::Reply {
            call: 7,
            result: CallResult::Error(serde_json::json!({"code": "not_pending", "message": "m"})),
        };
        for text in [line(&show), line(&reply)] {
            assert!(!text.contains('\n'));
            let back: ToWindow = serde_json::from_str(&text).unwrap();
            assert_eq!(line(&back), text);
        }
        assert_eq!(
            serde_json::from_str::<FromWindow>(&line(&call)).unwrap(),
            call
        );
        assert!(serde_json::from_str::<ToWindow>(r#"{"to_window":"format_disk"}"#).is_err());
    }
}
