//! A dispatched run's own bridge: a per-call socket in a private directory,
//! handed to the agent as `HARK_ASK_SOCK`, whose ask calls are carried to the
//! operator's app socket and filed under the run.
//!
//! Only ask calls pass (an agent cannot list, answer or skip items), each
//! peer's uid is checked, so is the app socket's server's (an ask is refused
//! rather than carried to another user), and the directory (socket and MCP config) is
//! removed when the run ends, on every exit path. When the agent dies
//! mid-question its connection closes, and so does the one to the app,
//! which settles the item as cancelled.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;

use crate::bridge::client::{self, ClientError};
use crate::bridge::socket::{self, SocketError, peer_is_owner};
use crate::bridge::wire::{
    ClientFrame, ErrorCode, ServerFrame, WireError, read_frame, write_frame,
};
use crate::model::ids::{RunId, SessionId};
use crate::platform::{self, Listener, Stream};

/// A private directory removed (with what is in it) when dropped.
///
/// Its name carries its owner's pid (`hark-run-<pid>-<random>`), so that a
/// directory whose owner died without dropping it (SIGKILL, a crash, a
/// power cut) is found and removed by the next [`RunDir::sweep`]; and it
/// holds a file its owner keeps locked while it lives, which the sweep
/// tries first: a pid the system is wrong about, or one reused, never
/// costs a live run its directory (seen under Wine: a live run's pid was
/// once taken for a dead one's, and its MCP config went under its agent).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    /// `.alive`, locked (`flock`, `LockFileEx`) until the owner drops it or
    /// dies.
    alive: Option<std::fs::File>,
}

/// The start of every run directory's name.
const RUN_DIR_PREFIX: &str = "hark-run-";

/// The file in each run directory its owner keeps locked.
const ALIVE: &str = ".alive";

impl RunDir {
    /// Creates `hark-run-<pid>-<random>` (0700) in the temp dir.
    pub fn create() -> Result<RunDir, SocketError> {
        let name = format!(
            "{RUN_DIR_PREFIX}{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let path = std::env::temp_dir().join(name);
        crate::files::ensure_private_dir(&path)?;
        // Without the lock the pid alone tells the sweep (as for an older
        // hark's directory).
        let alive =
            platform::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
                .open(path.join(ALIVE))
                .ok()
                .filter(|file| file.try_lock().is_ok());
        Ok(RunDir { path, alive })
    }

    /// Removes the run directories in the temp dir that belong to this user
    /// and whose owner process is gone; how many it removed. A directory is
    /// kept whenever its owner might be alive: a running process with its
    /// pid (even one that reused the pid), a name without a pid (an older
    /// hark's), another user's, or a symlink.
    pub fn sweep() -> usize {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return 0;
        };
        let me = platform::own_user();
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(RUN_DIR_PREFIX))
                .and_then(|rest| rest.split_once('-'))
                .and_then(|(pid, _)| pid.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if !meta.is_dir()
                || platform::owner(&meta) != me
                || platform::process_exists(pid)
                || held(&entry.path())
            {
                continue;
            }
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => {
                    tracing::info!(dir = %entry.path().display(), pid, "removed the directory of a run that died");
                    removed += 1;
                }
                Err(e) => {
                    tracing::warn!(dir = %entry.path().display(), "cannot remove a dead run's directory: {e}")
                }
            }
        }
        removed
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a file only its owner can read (0600).
    pub fn write_private(&self, name: &str, contents: &[u8]) -> std::io::Result<PathBuf> {
        use std::io::Write;
        let path = self.path.join(name);
        let mut file =
            platform::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
                .open(&path)?;
        file.write_all(contents)?;
        Ok(path)
    }
}

/// Whether the run directory `dir`'s owner holds its lock (a directory
/// without the file has none, and is left to the pid).
fn held(dir: &Path) -> bool {
    match std::fs::File::open(dir.join(ALIVE)) {
        Ok(file) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        // Closed first: Windows does not remove a directory with a file
        // open in it.
        drop(self.alive.take());
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The per-call socket, relaying to the app socket. Dropping it stops the
/// relay and removes the directory.
#[derive(Debug)]
pub struct Relay {
    pub socket: PathBuf,
    accept: JoinHandle<()>,
    /// Declared last: the directory goes after the listener.
    pub dir: RunDir,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Relay {
    /// Binds `ask.sock` in a new private directory; each ask on it goes to
    /// `app_socket` as one of `run_id` in `session_id`.
    pub fn start(
        app_socket: PathBuf,
        run_id: RunId,
        session_id: SessionId,
    ) -> Result<Relay, SocketError> {
        let dir = RunDir::create()?;
        let socket = dir.path().join("ask.sock");
        let (listener, socket_file) = socket::bind(&socket)?;
        let accept = tokio::spawn(accept_loop(
            listener,
            socket_file,
            app_socket,
            run_id,
            session_id,
        ));
        Ok(Relay {
            socket,
            accept,
            dir,
        })
    }
}

async fn accept_loop(
    listener: Listener,
    _socket_file: socket::SocketFile,
    app_socket: PathBuf,
    run_id: RunId,
    session_id: SessionId,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = platform::accept(&listener) => match accepted {
                Ok(stream) => {
                    connections.spawn(relay(stream, app_socket.clone(), run_id, session_id.clone()));
                }
                Err(e) => tracing::warn!("run socket: accept failed: {e}"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn refuse(stream: Stream, code: ErrorCode, message: &str) {
    let (_, mut writer) = platform::split(stream);
    let _ = write_frame(
        &mut writer,
        &ServerFrame::Error(WireError::new(code, message)),
    )
    .await;
}

/// Carries one ask from the agent to the app and everything after it back.
async fn relay(agent: Stream, app_socket: PathBuf, run_id: RunId, session_id: SessionId) {
    if !peer_is_owner(&agent).unwrap_or(false) {
        return refuse(
            agent,
            ErrorCode::Forbidden,
            "this socket serves its owner only",
        )
        .await;
    }
    let mut reader = BufReader::new(agent);
    let mut buf = Vec::new();
    let mut frame = match read_frame(&mut reader, &mut buf).await {
        Ok(true) => serde_json::from_slice::<ClientFrame>(&buf).ok(),
        _ => return,
    };
    // The run's socket names the run and its session, whatever the agent says.
    let Some(caller) = frame.as_mut().and_then(ClientFrame::caller_mut) else {
        return refuse(
            reader.into_inner(),
            ErrorCode::BadFrame,
            "a run's socket only takes ask and approve calls",
        )
        .await;
    };
    caller.session_id = Some(session_id);
    caller.run_id = Some(run_id);
    // A confined agent names pids of its own PID namespace, which mean
    // another process out here: the kernel's word for the asking process
    // (its MCP server, which lives as long as the agent) stands instead.
    if let Some(peer) = platform::peer_pid(reader.get_ref())
        && !platform::in_our_pid_namespace(peer)
    {
        caller.asker.pid = u32::try_from(peer).ok();
    }
    let mut app = match client::connect(&app_socket).await {
        Ok(app) => app,
        Err(e @ ClientError::Unreachable { .. }) => {
            tracing::warn!("the operator went away: {e}");
            // The agent sees the hang-up as "no operator", at once.
            return;
        }
        Err(e) => {
            // Another user's socket in the app's place: it gets nothing.
            tracing::warn!("run socket: {e}");
            return refuse(reader.into_inner(), ErrorCode::Forbidden, &e.to_string()).await;
        }
    };
    // (`frame` is `Some` here, which serializes as the frame itself.)
    let mut bytes = match serde_json::to_vec(&frame) {
        Ok(bytes) => bytes,
        Err(_) => return,
    };
    bytes.push(b'\n');
    // Whatever the agent sent after the ask (a cancel) follows it.
    bytes.extend_from_slice(reader.buffer());
    if app.write_all(&bytes).await.is_err() {
        return;
    }
    let mut agent = reader.into_inner();
    // Both ways until either side hangs up: the answer back, a cancel forward.
    let _ = tokio::io::copy_bidirectional(&mut agent, &mut app).await;
}
