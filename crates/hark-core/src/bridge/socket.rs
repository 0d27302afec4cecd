//! Where the bridge sockets live, and how they are kept owner-only.
//!
//! Every socket sits in a directory only its owner can enter (0700), is
//! itself 0600, and the listener checks each peer's uid (SO_PEERCRED) on top.
//! The file is removed when its [`SocketFile`] guard drops, on every exit path.
//! On Windows a socket path stands for a named pipe (`crate::platform`),
//! which leaves no file.

use std::io;
use std::path::{Path, PathBuf};

use crate::files::{PrivateDirError, ensure_private_dir};
use crate::platform::{Listener, Stream};

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("hark is already running on {}", .0.display())]
    AlreadyRunning(PathBuf),
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    #[error(transparent)]
    Dir(#[from] PrivateDirError),
    #[error("no place for the socket: {0}; set HARK_SOCKET or XDG_RUNTIME_DIR")]
    NoPath(#[from] crate::files::NoHomeError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SocketError + '_ {
    move |source| SocketError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The app's well-known socket: `$HARK_SOCKET`, else
/// `$XDG_RUNTIME_DIR/hark/hark.sock`, else a private directory of the
/// platform's (the runtime dir, or the local data dir where there is none).
pub fn app_socket_path() -> Result<PathBuf, SocketError> {
    if let Some(path) = crate::env::var_os(crate::env::SOCKET) {
        return Ok(PathBuf::from(path));
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(dir).join("hark").join("hark.sock"));
    }
    let dirs = crate::files::project_dirs()?;
    let dir = dirs.runtime_dir().unwrap_or_else(|| dirs.data_local_dir());
    Ok(dir.join("hark.sock"))
}

pub use crate::platform::raise_open_file_limit;

/// Whether the peer of a connected stream runs as this user.
pub fn peer_is_owner(stream: &Stream) -> io::Result<bool> {
    Ok(crate::platform::peer_user(stream)? == crate::platform::own_user())
}

/// Removes the socket file when dropped, if it is still the one bound.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    /// The bound file's device and inode: if the file was deleted and
    /// another daemon bound the same path since, dropping leaves theirs.
    #[cfg(unix)]
    dev_ino: (u64, u64),
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    #[cfg(unix)]
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        // (Another daemon could still bind between this check and the
        // removal; the window is a system call wide.)
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == self.dev_ino => {
                let _ = std::fs::remove_file(&self.path);
            }
            _ => {}
        }
    }

    /// A named pipe goes with its last handle.
    #[cfg(windows)]
    fn drop(&mut self) {}
}

/// Binds an owner-only socket at `path`. A stale socket file left by a dead
/// process is replaced; a live one means hark is already running.
#[cfg(unix)]
pub fn bind(path: &Path) -> Result<(Listener, SocketFile), SocketError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        ensure_private_dir(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(SocketError::NotASocket(path.to_owned()));
        }
        Ok(_) => {
            if crate::platform::answers(path) {
                return Err(SocketError::AlreadyRunning(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(io_err(path))?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path)(e)),
    }
    let listener = Listener::bind(path).map_err(io_err(path))?;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(io_err(path)(e));
        }
    };
    let file = SocketFile {
        path: path.to_owned(),
        dev_ino: (meta.dev(), meta.ino()),
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_err(path))?;
    Ok((listener, file))
}

/// Creates the named pipe that stands for `path`, owner-only, as its name's
/// first instance: a pipe of that name already there (a daemon running, or
/// another process squatting the name) is refused.
#[cfg(windows)]
pub fn bind(path: &Path) -> Result<(Listener, SocketFile), SocketError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        ensure_private_dir(dir)?;
    }
    let listener = crate::platform::listen(path).map_err(|e| {
        if e.kind() == io::ErrorKind::PermissionDenied {
            SocketError::AlreadyRunning(path.to_owned())
        } else {
            io_err(path)(e)
        }
    })?;
    let file = SocketFile {
        path: path.to_owned(),
    };
    Ok((listener, file))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio::net::UnixStream;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn sockets_are_owner_only_and_removed_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run").join("hark.sock");
        let (_listener, file) = bind(&path).unwrap();
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&path), 0o600);
        drop(file);
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_socket_binds_in_an_own_directory_after_tightening_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let path = dir.join("hark.sock");
        let (listener, _file) = bind(&path).unwrap();
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        let _client = UnixStream::connect(&path).await.unwrap();
        listener.accept().await.unwrap();
    }

    #[tokio::test]
    async fn the_peer_check_compares_uids() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hark.sock");
        let (listener, _file) = bind(&path).unwrap();
        let client = UnixStream::connect(&path).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert_eq!(
            server.peer_cred().unwrap().uid(),
            crate::platform::own_user()
        );
        assert!(peer_is_owner(&server).unwrap());
        drop(client);
    }

    #[tokio::test]
    async fn a_live_socket_is_not_stolen_and_a_stale_one_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hark.sock");
        let (listener, file) = bind(&path).unwrap();
        assert!(matches!(bind(&path), Err(SocketError::AlreadyRunning(_))));
        drop(listener);
        std::mem::forget(file); // leave the file behind, as a killed process would
        let (_listener, _file) = bind(&path).unwrap();
    }

    #[tokio::test]
    async fn a_guard_leaves_a_socket_it_did_not_bind() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hark.sock");
        let (_first, first_file) = bind(&path).unwrap();
        // The first daemon's file is deleted and a second daemon binds the path.
        std::fs::remove_file(&path).unwrap();
        let (second, _second_file) = bind(&path).unwrap();
        drop(first_file);
        assert!(path.exists(), "the first guard removed the second socket");
        let _client = UnixStream::connect(&path).await.unwrap();
        second.accept().await.unwrap();
    }

    #[test]
    fn a_regular_file_is_never_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("notes.txt");
        std::fs::write(&path, "keep me").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        assert!(matches!(bind(&path), Err(SocketError::NotASocket(_))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    }
}
