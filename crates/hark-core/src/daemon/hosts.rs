//! Sockets for other hosts: agents on a machine the operator reaches over
//! SSH ask through `ssh -R REMOTE:LOCAL`, which forwards a socket on the
//! remote host to one of these. Each host has its own socket
//! (`<socket dir>/hosts/<name>.sock`), so the daemon knows which host asked
//! from the socket a connection came in on — never from what the client
//! says — and names it on the item.
//!
//! A host's socket takes an agent's frames only. Whatever runs on the
//! remote host reaches it (the forward is open to every process of the
//! remote login), and the local daemon sees only the local `ssh` client as
//! its peer, so no process check can tell an agent from its operator
//! there: an answer, a listing or a dispatch from a host's socket is
//! refused, the remote counterpart of "an agent cannot answer itself".

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::bridge::socket::{self, SocketError};
use crate::bridge::wire::ClientFrame;
use crate::daemon::peers::is_operator;

/// The longest host name taken.
const MAX_NAME: usize = 64;

/// A host's name as items show it: letters, digits, `.`, `-` and `_`, not
/// starting with a dot (it names a file).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostName(String);

/// A host name that cannot name a socket file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a host name hark takes: use 1 to {MAX_NAME} letters, digits, '.', '-' or '_', not starting with '.'"
)]
pub struct BadHostName(pub String);

impl HostName {
    pub fn parse(name: &str) -> Result<HostName, BadHostName> {
        let fits = !name.is_empty()
            && name.len() <= MAX_NAME
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if fits {
            Ok(HostName(name.to_owned()))
        } else {
            Err(BadHostName(name.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a connection came in: this machine's socket, or a host's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Local,
    Host(HostName),
}

impl Origin {
    /// Whether a frame from here is served: on a host's socket, only an
    /// agent's frames (asks, approvals, the parked agent's await, the
    /// sub-agent note, a run's start and end), none acting as the operator.
    pub fn admits(&self, frame: &ClientFrame) -> bool {
        match self {
            Origin::Local => true,
            Origin::Host(_) => !is_operator(frame),
        }
    }

    /// The host an item from here names.
    pub fn host(&self) -> Option<&HostName> {
        match self {
            Origin::Local => None,
            Origin::Host(name) => Some(name),
        }
    }
}

/// Why a host's socket could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum HostSocketError {
    #[error(transparent)]
    Name(#[from] BadHostName),
    #[error(transparent)]
    Socket(#[from] SocketError),
}

/// The hosts' sockets a daemon serves, by name. Each is served until the
/// daemon stops ([`Hosts::stop`]), which removes its file.
#[derive(Debug, Clone)]
pub struct Hosts {
    dir: PathBuf,
    open: Arc<Mutex<HashMap<HostName, PathBuf>>>,
    stopped: watch::Sender<bool>,
}

/// A host's socket, bound, for the listener to serve.
#[derive(Debug)]
pub struct Opened {
    pub name: HostName,
    pub path: PathBuf,
    /// `None` when the host's socket was open already.
    pub bound: Option<(crate::platform::Listener, socket::SocketFile)>,
}

impl Hosts {
    /// Hosts' sockets under `hosts/` beside the daemon's own `socket`.
    pub fn beside(socket: &Path) -> Hosts {
        let dir = socket
            .parent()
            .map_or_else(|| PathBuf::from("hosts"), |d| d.join("hosts"));
        Hosts {
            dir,
            open: Arc::default(),
            stopped: watch::Sender::new(false),
        }
    }

    /// Binds `name`'s socket, or finds it open.
    pub fn open(&self, name: &str) -> Result<Opened, HostSocketError> {
        let name = HostName::parse(name)?;
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = open.get(&name) {
            return Ok(Opened {
                name,
                path: path.clone(),
                bound: None,
            });
        }
        let path = self.dir.join(format!("{name}.sock"));
        let bound = socket::bind(&path)?;
        open.insert(name.clone(), path.clone());
        Ok(Opened {
            name,
            path,
            bound: Some(bound),
        })
    }

    /// Completes once the daemon stops.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + use<> {
        let mut stopped = self.stopped.subscribe();
        async move {
            let _ = stopped.wait_for(|stopped| *stopped).await;
        }
    }

    /// Stops serving every host's socket.
    pub fn stop(&self) {
        self.stopped.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::wire::{Caller, WireReply};
    use crate::model::ids::ItemId;

    #[test]
    fn a_host_name_names_a_file_in_the_hosts_directory_and_nothing_else() {
        for good in ["devbox", "ci-runner_3", "build.example.com"] {
            assert_eq!(HostName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            ".",
            "..",
            "../etc",
            "a/b",
            "dev box",
            "dév",
            &"x".repeat(65),
        ] {
            assert_eq!(HostName::parse(bad), Err(BadHostName(bad.to_owned())));
        }
    }

    #[test]
    fn a_host_socket_takes_an_agents_frames_and_refuses_the_operators() {
        let host = Origin::Host(HostName::parse("devbox").unwrap());
        let ask = ClientFrame::Ask {
            caller: Caller::default(),
            request: serde_json::json!({}),
        };
        let reply = ClientFrame::Reply {
            id: ItemId(uuid::Uuid::new_v4()),
            reply: WireReply::Skip,
            via: None,
        };
        assert!(host.admits(&ask));
        assert!(host.admits(&ClientFrame::Cancel));
        for refused in [
            reply.clone(),
            ClientFrame::Status,
            ClientFrame::Subscribe,
            ClientFrame::ClearSettled,
            ClientFrame::HostSocket {
                host: "other".into(),
            },
        ] {
            assert!(!host.admits(&refused), "{refused:?}");
            assert!(Origin::Local.admits(&refused));
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_host_socket_is_bound_once_and_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let hosts = Hosts::beside(&tmp.path().join("hark.sock"));
        let first = hosts.open("devbox").unwrap();
        assert_eq!(first.path, tmp.path().join("hosts/devbox.sock"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&tmp.path().join("hosts")), 0o700);
        assert_eq!(mode(&first.path), 0o600);
        let again = hosts.open("devbox").unwrap();
        assert_eq!(
            (again.path, again.bound.is_none()),
            (first.path.clone(), true)
        );
        assert!(matches!(
            hosts.open("../x"),
            Err(HostSocketError::Name(BadHostName(_)))
        ));
        drop(first.bound);
        assert!(!first.path.exists());
    }
}
