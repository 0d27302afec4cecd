//! Landlock's scopes, on top of bubblewrap: abstract unix sockets are named
//! in the network namespace, which the sandbox shares (an agent needs its
//! network), so without more a confined agent could connect to one made
//! outside the run — an X server's `@/tmp/.X11-unix/X0`, which lets in
//! any process of a user it trusts without a cookie (`xhost
//! +si:localuser:…`, as GNOME sets), or a session bus on an abstract
//! address. Landlock's `LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET` (Linux 6.12,
//! ABI 6) refuses a process connecting to an abstract socket made outside
//! its domain, and the agent's own (made inside) still work.
//!
//! The domain is taken by one thread of `hark run`, which starts every
//! confined agent and lives as long as the process, so that `hark run`
//! itself and its runtime's threads stay as they are and everything the
//! agent starts inherits it (credentials are the forking thread's).

use landlock::{CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus, Scope};

/// The scopes hark asks for: abstract sockets only. (Signals are already
/// out of reach: the agent's PID namespace holds only its own processes.)
const SCOPE: Scope = Scope::AbstractUnixSocket;

/// Why the scope could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("Landlock cannot scope abstract unix sockets here: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("Landlock took the scope only in part ({0:?})")]
    NotEnforced(RulesetStatus),
}

/// A ruleset of [`SCOPE`], required whole: on a kernel without ABI 6 (or
/// with Landlock off) this fails instead of doing less.
fn ruleset() -> Result<landlock::RulesetCreated, ScopeError> {
    Ok(Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(SCOPE)?
        .create()?)
}

/// Whether this kernel can scope abstract sockets (it makes a ruleset and
/// drops it, restricting nothing).
pub fn available() -> Result<(), ScopeError> {
    ruleset().map(drop)
}

/// Scopes the calling thread (and whatever it starts from now on) out of
/// abstract sockets made outside its domain. The thread keeps it until it
/// ends: call it from a thread made to start one child.
pub fn scope_this_thread() -> Result<(), ScopeError> {
    let status = ruleset()?.restrict_self()?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(ScopeError::NotEnforced(other)),
    }
}

/// Starts `command` scoped, from the one thread of this process that
/// takes the scope ([`Spawner`]), on `runtime` (whose reaper the child is
/// given to).
pub fn spawn_scoped(
    command: tokio::process::Command,
    runtime: &tokio::runtime::Handle,
) -> std::io::Result<tokio::process::Child> {
    let spawner = {
        let mut spawner = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        match &*spawner {
            Some(spawner) => spawner.clone(),
            None => spawner.insert(Spawner::start(runtime.clone())?).clone(),
        }
    };
    spawner.spawn(command)
}

/// The thread that starts scoped children. It lives as long as the
/// process: a child's `PR_SET_PDEATHSIG` (bubblewrap's `--die-with-parent`)
/// fires when the *thread* that started it ends, so a thread made for one
/// spawn would kill the sandbox as soon as it returned.
static SPAWNER: std::sync::Mutex<Option<Spawner>> = std::sync::Mutex::new(None);

type Spawned = std::io::Result<tokio::process::Child>;

/// A command to start, and where its child goes.
type Job = (tokio::process::Command, std::sync::mpsc::Sender<Spawned>);

#[derive(Debug, Clone)]
struct Spawner(std::sync::mpsc::Sender<Job>);

impl Spawner {
    /// Starts the thread, which takes the scope before anything else.
    fn start(runtime: tokio::runtime::Handle) -> std::io::Result<Spawner> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (ready, scoped) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hark-scoped-spawner".into())
            .spawn(move || {
                let taken = scope_this_thread();
                let failed = taken.is_err();
                let _ = ready.send(taken);
                if failed {
                    return;
                }
                let _entered = runtime.enter();
                for (mut command, reply) in queue {
                    let _ = reply.send(command.spawn());
                }
            })?;
        match scoped.recv() {
            Ok(Ok(())) => Ok(Spawner(jobs)),
            Ok(Err(e)) => Err(std::io::Error::other(e)),
            Err(_) => Err(std::io::Error::other("the scoped spawner thread ended")),
        }
    }

    fn spawn(&self, command: tokio::process::Command) -> Spawned {
        let (reply, spawned) = std::sync::mpsc::channel();
        self.0
            .send((command, reply))
            .map_err(|_| std::io::Error::other("the scoped spawner thread ended"))?;
        spawned
            .recv()
            .map_err(|_| std::io::Error::other("the scoped spawner thread ended"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};

    /// An abstract socket made here, outside any domain, and one made by a
    /// scoped thread: the scoped thread reaches only its own.
    #[test]
    fn a_scoped_thread_cannot_connect_to_an_abstract_socket_made_outside_its_domain() {
        if available().is_err() {
            // A kernel before 6.12: nothing is scoped, and taking the
            // scope fails whole rather than doing less.
            let taken = std::thread::spawn(scope_this_thread).join().unwrap();
            assert!(matches!(taken, Err(ScopeError::Ruleset(_))), "{taken:?}");
            return;
        }
        let name = format!("hark-test-{}", std::process::id());
        let outside =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        assert!(
            UnixStream::connect_addr(&addr).is_ok(),
            "reachable unscoped"
        );
        let (outside_refused, own_reached) = std::thread::spawn(move || {
            scope_this_thread().unwrap();
            let refused = UnixStream::connect_addr(&addr).unwrap_err();
            let own = format!("{name}-own");
            let own = SocketAddr::from_abstract_name(own.as_bytes()).unwrap();
            let _listener = UnixListener::bind_addr(&own).unwrap();
            (refused.kind(), UnixStream::connect_addr(&own).is_ok())
        })
        .join()
        .unwrap();
        assert_eq!(outside_refused, std::io::ErrorKind::PermissionDenied);
        assert!(own_reached);
        drop(outside);
    }
}
