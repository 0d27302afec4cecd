//! The daemon the studio serves itself when none runs.

use std::path::PathBuf;
use std::sync::Arc;

use hark_core::bridge::client;
use hark_core::bridge::wire::ClientFrame;
use hark_core::daemon::listener;
use hark_core::daemon::serve::{self, ServeError, ServeOptions};
use hark_core::files::NoHomeError;
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::prompter::{OperatorPrompter, PromptFuture};
use hark_core::store::Store;

use super::Studio;

/// Why no daemon runs, and the studio cannot serve one itself.
#[derive(Debug, thiserror::Error)]
pub(super) enum OwnDaemonError {
    #[error("no place for the studio's store: {0}")]
    NoStore(#[from] NoHomeError),
    #[error("no daemon was running, and the studio cannot serve one: {0}")]
    Serve(#[from] ServeError),
}

/// The studio's own daemon's prompter: it puts nothing anywhere, since the
/// studio itself answers over the socket (an elicitation, or `answer`).
#[derive(Debug)]
struct Holding;

impl OperatorPrompter for Holding {
    fn ask(&self, _session_id: &SessionId, _item: Arc<Item>) -> PromptFuture {
        Box::pin(std::future::pending())
    }

    fn surface(&self) -> Surface {
        Surface::Studio
    }
}

impl Studio {
    /// The daemon the runs ask through: the app's or `hark serve`'s when
    /// one runs, else one the studio serves itself (from the first run on),
    /// on a socket of its own beside the app's and a store of its own
    /// (`<data dir>/studio/hark.db`): the app's socket stays free for the
    /// app, and no other daemon's pending items are closed out.
    pub(super) async fn socket(&self) -> Result<PathBuf, OwnDaemonError> {
        let mut own = self.own.lock().await;
        if let Some(file) = own.as_ref() {
            return Ok(file.path().to_owned());
        }
        if client::request(&self.settings.socket, &ClientFrame::Status)
            .await
            .is_ok()
        {
            return Ok(self.settings.socket.clone());
        }
        let socket = self
            .settings
            .socket
            .with_file_name(format!("studio-{}.sock", std::process::id()));
        let store = Store::default_path()?
            .with_file_name("studio")
            .join("hark.db");
        let options = ServeOptions {
            socket: Some(socket),
            store: Some(store),
            ..Default::default()
        };
        let prepared = serve::prepare(Arc::new(Holding), options)?;
        let path = prepared.socket_file.path().to_owned();
        tokio::spawn(listener::run(
            prepared.listener,
            prepared.daemon,
            std::future::pending(),
        ));
        *own = Some(prepared.socket_file);
        Ok(path)
    }
}
