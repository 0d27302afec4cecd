//! The desktop `OperatorPrompter`: a notification and the modal. The answer
//! comes back through the `reply` command into the registry, so the future
//! it returns only ends when the item settles (and is then dropped).

use std::sync::Arc;

use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::prompter::{OperatorPrompter, PromptFuture};
use tauri::{AppHandle, Manager, Runtime};

use crate::notify::Notifier;
use crate::shell::Shell;
use crate::windows::{self, View};

#[derive(Debug)]
pub struct DesktopPrompter<R: Runtime> {
    pub app: AppHandle<R>,
}

impl<R: Runtime> OperatorPrompter for DesktopPrompter<R> {
    fn ask(&self, _session_id: &SessionId, item: Arc<Item>) -> PromptFuture {
        let app = self.app.clone();
        let quiet = app.state::<Arc<Shell>>().do_not_disturb();
        if !quiet {
            app.state::<Arc<Notifier>>().show(&app, &item);
            windows::show(&app, View::Modal);
        }
        Box::pin(std::future::pending())
    }

    fn surface(&self) -> Surface {
        Surface::Desktop
    }
}
