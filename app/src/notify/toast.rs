//! Windows: toast notifications (tauri-winrt-notification, Tauri's own
//! wrapper of the WinRT toast API). A click on the toast or one of its
//! buttons comes back as its action; a dismissal as a close. Limits: a
//! toast cannot be taken back or replaced from here (a settled item's stays
//! until dismissed, and does nothing when clicked). Toasts go under the
//! app's own AppUserModelID (`dev.hark.app`) when its Start-menu shortcut
//! carries it, as hark's installer makes it; otherwise (hark built or
//! unpacked by hand) under PowerShell's, which says so on each toast.
//! Compiled in CI; never run (the app needs WebView2, which Wine lacks).

use tauri_winrt_notification::Toast;
use tokio::sync::mpsc;

use super::{Backend, BoxFuture, Counted, Event, Note, NotifyError, OPEN};

/// The toasts' ids (counted here; WinRT has none to give) and where their
/// events go.
#[derive(Debug, Default)]
pub struct Toasts {
    counted: Counted,
}

impl Backend for Toasts {
    fn show<'a>(
        &'a self,
        note: &'a Note,
        _replaces: u32,
    ) -> BoxFuture<'a, Result<u32, NotifyError>> {
        let id = self.counted.next_id();
        let (clicked, dismissed) = (self.counted.sender.clone(), self.counted.sender.clone());
        let note = note.clone();
        let app_id = hark_core::platform::toast_app_id();
        // Built and shown on a blocking thread: a toast is COM objects, not
        // to be sent between threads, and showing one waits a little.
        let shown = move || {
            let mut toast = Toast::new(app_id)
                .title(&note.title)
                .text1(&note.body)
                .on_activated(move |action| {
                    let key = action.unwrap_or_else(|| OPEN.to_owned());
                    let _ = clicked.send(Event::Action { id, key });
                    Ok(())
                })
                .on_dismissed(move |_reason| {
                    let _ = dismissed.send(Event::Closed { id });
                    Ok(())
                });
            // The body's click is "Open"; the rest are buttons.
            for (key, label) in note.actions.iter().filter(|(key, _)| key != OPEN) {
                toast = toast.add_button(label, key);
            }
            toast.show()
        };
        Box::pin(async move {
            tokio::task::spawn_blocking(shown).await??;
            Ok(id)
        })
    }

    fn close(&self, _id: u32) -> BoxFuture<'_, Result<(), NotifyError>> {
        Box::pin(async { Err(NotifyError::ToastStays) })
    }

    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, NotifyError>> {
        let events = self.counted.take_events();
        Box::pin(async move { events })
    }
}
