//! One app a session: the app socket decides (a second app cannot bind
//! it), and on Linux a second `hark app` then asks the first, over the
//! session bus, to show its inbox, and ends.
//!
//! The first app owns a name on the session bus for that call. Any client
//! of the bus can make the call, so nothing it sends is taken: it only
//! shows the inbox. And any client can take the name first: a name held by
//! something else never keeps an app from starting (the socket decides
//! that), it only leaves a second app with no one to ask.
//!
//! Elsewhere a second app ends with "another hark is already serving" (a
//! second start from the Start menu or the Dock does not bring the first
//! one forward yet).

use crate::App;

/// The session's first app's name on the bus, held while the app runs.
#[derive(Debug)]
pub struct Single {
    #[cfg(target_os = "linux")]
    _bus: Option<zbus::Connection>,
}

#[cfg(target_os = "linux")]
const NAME: &str = "dev.hark.app.SingleInstance";
#[cfg(target_os = "linux")]
const PATH: &str = "/dev/hark/app/SingleInstance";

/// The object a second app calls.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Focus {
    app: App,
}

#[cfg(target_os = "linux")]
#[zbus::interface(name = "dev.hark.app.SingleInstance")]
impl Focus {
    /// Shows the inbox (and takes nothing else from the caller).
    fn show_inbox(&self) {
        crate::windows::show(&self.app, crate::windows::View::Inbox);
    }
}

impl Single {
    /// Takes the session's name for `app`, which serves the app socket.
    #[cfg(target_os = "linux")]
    pub fn claim(runtime: &tokio::runtime::Runtime, app: &App) -> Single {
        let bus = runtime.block_on(async {
            use zbus::fdo::{RequestNameFlags, RequestNameReply};
            let bus = zbus::connection::Builder::session()?
                .serve_at(PATH, Focus { app: app.clone() })?
                .build()
                .await?;
            // Neither replacing another's name nor letting a later one
            // take it (zbus's own request allows both).
            match bus
                .request_name_with_flags(NAME, RequestNameFlags::DoNotQueue.into())
                .await?
            {
                RequestNameReply::PrimaryOwner | RequestNameReply::AlreadyOwner => Ok(bus),
                _ => Err(zbus::Error::NameTaken),
            }
        });
        match bus {
            Ok(bus) => Single { _bus: Some(bus) },
            Err(e) => {
                tracing::warn!("cannot take {NAME} ({e}): a second app will not find this one");
                Single { _bus: None }
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn claim(_runtime: &tokio::runtime::Runtime, _app: &App) -> Single {
        Single {}
    }
}

/// Another app serves this session's socket: asks it to show its inbox.
/// Whether it did.
#[cfg(target_os = "linux")]
pub fn show_the_first(runtime: &tokio::runtime::Runtime) -> bool {
    let shown = runtime.block_on(async {
        let bus = zbus::Connection::session().await?;
        bus.call_method(Some(NAME), PATH, Some(NAME), "ShowInbox", &())
            .await
    });
    match shown {
        Ok(_) => {
            tracing::info!("another hark app runs here: its inbox was shown");
            true
        }
        Err(e) => {
            tracing::debug!("no app answered on {NAME}: {e}");
            false
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn show_the_first(_runtime: &tokio::runtime::Runtime) -> bool {
    false
}
