//! Unix-domain sockets and the process calls of Linux and macOS.

use std::io;
use std::path::Path;

/// A connected socket.
pub type Stream = tokio::net::UnixStream;
/// Where connections are accepted.
pub type Listener = tokio::net::UnixListener;
/// A connection's reading half.
pub type ReadHalf = tokio::net::unix::OwnedReadHalf;
/// A connection's writing half.
pub type WriteHalf = tokio::net::unix::OwnedWriteHalf;
/// Who a process runs as: its uid.
pub type User = u32;

/// This process's effective user.
pub fn own_user() -> User {
    rustix::process::geteuid().as_raw()
}

/// A user as a message names it.
pub fn describe_user(user: &User) -> String {
    format!("uid {user}")
}

pub fn split(stream: Stream) -> (ReadHalf, WriteHalf) {
    stream.into_split()
}

pub async fn connect(path: &Path) -> io::Result<Stream> {
    Stream::connect(path).await
}

/// Whether something answers at `path` now (a live daemon, not a stale file).
pub fn answers(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

pub async fn accept(listener: &Listener) -> io::Result<Stream> {
    listener.accept().await.map(|(stream, _)| stream)
}

/// The user the other end runs as.
pub fn peer_user(stream: &Stream) -> io::Result<User> {
    Ok(stream.peer_cred()?.uid())
}

/// The other end's process, where the system tells it.
pub fn peer_pid(stream: &Stream) -> Option<i32> {
    stream.peer_cred().ok().and_then(|c| c.pid())
}

/// The children of process `pid` (Linux's `/proc/PID/task/PID/children`;
/// none where the system does not tell).
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether this process runs as root (its effective uid 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether process `pid` sees the same pids as this one: false for one in
/// another PID namespace (a confined agent), whose word for a pid means
/// another process here. Where the system cannot tell, true.
pub fn in_our_pid_namespace(pid: i32) -> bool {
    let ns = |of: &str| std::fs::read_link(format!("/proc/{of}/ns/pid")).ok();
    match (ns("self"), ns(&pid.to_string())) {
        (Some(ours), Some(theirs)) => ours == theirs,
        _ => true,
    }
}

/// Whether a process with `pid` exists (a zombie, or another user's,
/// counts): signal 0 checks without sending anything.
pub fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Asks process `pid` to end (SIGTERM), as a stop signal would: a `hark
/// run` so told stops its agent's whole process group before it exits.
pub fn ask_to_end(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

/// Raises this process's soft limit on open files to its hard limit: every
/// waiting question holds a connection open, and the common default of 1024
/// would cap a busy operator at about a thousand pending questions.
pub fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// The owner of a file.
pub fn owner(meta: &std::fs::Metadata) -> User {
    use std::os::unix::fs::MetadataExt;
    meta.uid()
}

/// This process's parent.
pub fn parent_pid() -> u32 {
    std::os::unix::process::parent_id()
}

/// Whether `path` is a file this user may run.
pub fn runnable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
