//! Owner-only directories: where hark keeps what only its user may read or
//! enter (the sockets, the store, the run logs, the tray's icons).

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A directory hark cannot keep private.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    #[error("{} is owned by uid {owner}, not by this user (uid {me})", path.display())]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// This process's effective uid.
pub fn own_uid() -> u32 {
    #[allow(unsafe_code)]
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe {
        libc::geteuid()
    }
}

/// Creates `dir` as 0700 if missing; an existing one must belong to this user.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    let io_err = |source| PrivateDirError::Io {
        path: dir.to_owned(),
        source,
    };
    match std::fs::metadata(dir) {
        Ok(meta) => {
            let me = own_uid();
            if meta.uid() != me {
                return Err(PrivateDirError::Foreign {
                    path: dir.to_owned(),
                    owner: meta.uid(),
                    me,
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err),
        Err(e) => Err(io_err(e)),
    }
}
