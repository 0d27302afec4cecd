//! Owner-only directories: where hark keeps what only its user may read or
//! enter (the sockets, the store, the run logs, the tray's icons).

use std::io;
use std::path::{Path, PathBuf};

/// A directory hark cannot keep private.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    #[error("{} is owned by uid {owner}, not by this user (uid {me})", path.display())]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} is open to other users (mode {mode:o}) and could not be made owner-only: {source}",
        path.display()
    )]
    Loose {
        path: PathBuf,
        mode: u32,
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Why hark has no per-user directories to default to.
#[derive(Debug, thiserror::Error)]
pub enum NoHomeError {
    #[error("no home directory is set (HOME)")]
    Unset,
    /// hark does not create a home directory: a missing one is a mistake in
    /// the environment (a service's, a container's), and a directory made
    /// in its place would hide it.
    #[error(
        "the home directory {} does not exist, and hark does not create it",
        home.display()
    )]
    Missing { home: PathBuf },
}

/// hark's per-user directories under an existing home directory.
pub fn project_dirs() -> Result<directories::ProjectDirs, NoHomeError> {
    let base = directories::BaseDirs::new().ok_or(NoHomeError::Unset)?;
    if !base.home_dir().is_dir() {
        return Err(NoHomeError::Missing {
            home: base.home_dir().to_owned(),
        });
    }
    directories::ProjectDirs::from("", "", "hark").ok_or(NoHomeError::Unset)
}

/// The pids of `parent`'s children whose name (as `/proc` gives it,
/// truncated to 15 bytes) is `comm`; none where there is no `/proc`.
pub fn children_named(parent: u32, comm: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid …`: comm may hold spaces, so split at its end.
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let name = head.split_once(" (").map(|(_, n)| n).unwrap_or_default();
            let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            ppid == Some(parent) && name == comm
        })
        .collect()
}

/// Creates `dir` as 0700 if missing; an existing one must belong to this
/// user, and is tightened to 0700 if it is open to anyone else (in a
/// directory others can write, another user could replace what hark puts
/// there: a socket, and answer the questions sent to it).
pub fn ensure_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    match private_dir_mode(dir) {
        #[cfg(unix)]
        Ok(mode) => {
            use std::os::unix::fs::PermissionsExt;
            if mode & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
                    |source| PrivateDirError::Loose {
                        path: dir.to_owned(),
                        mode,
                        source,
                    },
                )?;
                tracing::warn!(
                    "{} was open to other users (mode {mode:o}); made it owner-only (0700)",
                    dir.display()
                );
            }
            Ok(())
        }
        // Windows: the directory keeps the ACL it inherits from the user's
        // profile (see `crate::platform`).
        #[cfg(windows)]
        Ok(_) => Ok(()),
        Err(PrivateDirError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(|source| PrivateDirError::Io {
                path: dir.to_owned(),
                source,
            })
        }
        Err(e) => Err(e),
    }
}

/// An existing directory's mode (permission bits; 0 on Windows, which has
/// none), refused when it belongs to another user. Changes nothing: what
/// [`ensure_private_dir`] acts on, and `hark doctor` reports.
pub fn private_dir_mode(dir: &Path) -> Result<u32, PrivateDirError> {
    let meta = std::fs::metadata(dir).map_err(|source| PrivateDirError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let (owner, me) = (crate::platform::owner(&meta), crate::platform::own_user());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if owner != me {
            return Err(PrivateDirError::Foreign {
                path: dir.to_owned(),
                owner,
                me,
            });
        }
        Ok(meta.mode() & 0o7777)
    }
    #[cfg(windows)]
    {
        let _ = (owner, me);
        Ok(0)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_missing_directory_is_created_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn an_own_directory_open_to_others_is_tightened() {
        for loose in [0o777, 0o1777, 0o755, 0o711] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("hark");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(loose)).unwrap();
            ensure_private_dir(&dir).unwrap();
            assert_eq!(mode(&dir), 0o700, "from {loose:o}");
        }
    }

    #[test]
    fn a_directory_of_another_user_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("theirs");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let other = crate::platform::own_user().wrapping_add(4242);
        if std::os::unix::fs::chown(&dir, Some(other), None).is_err() {
            // Only root can give a directory away; ownership is checked the same way.
            return;
        }
        let refused = ensure_private_dir(&dir);
        assert!(
            matches!(refused, Err(PrivateDirError::Foreign { owner, .. }) if owner == other),
            "{refused:?}"
        );
        assert_eq!(mode(&dir), 0o777);
    }
}
