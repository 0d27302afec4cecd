//! The desktop `OperatorPrompter`: a notification and the modal. The answer
//! comes back through the `reply` command into the registry, so the future
//! it returns only ends when the item settles (and is then dropped).

use std::sync::{Arc, OnceLock};

use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::prompter::{OperatorPrompter, PromptFuture};

use crate::App;
use crate::windows::{self, View};

/// The app, once it is whole (the core is started before it is, and asks
/// only after).
#[derive(Debug, Default)]
pub struct DesktopPrompter {
    pub app: OnceLock<App>,
}

impl OperatorPrompter for DesktopPrompter {
    fn ask(&self, _session_id: &SessionId, item: Arc<Item>) -> PromptFuture {
        if let Some(app) = self.app.get()
            && !app.shell.do_not_disturb()
        {
            app.notifier.show(app, &item);
            windows::show(app, View::Modal);
        }
        Box::pin(std::future::pending())
    }

    fn surface(&self) -> Surface {
        Surface::Desktop
    }
}
