//! The platform seam: how the bridge's connections are made and checked,
//! and the few process and file facts that differ between systems.
//! Everything above it is the same on Linux, macOS and Windows.
//!
//! - **Unix** (Linux, macOS): unix-domain sockets in owner-only (0700)
//!   directories, each socket 0600; both ends check the other's uid
//!   (`SO_PEERCRED` on Linux, `LOCAL_PEERCRED` on macOS, through tokio's
//!   `peer_cred`).
//! - **Windows**: named pipes, one name per socket path
//!   (`\\.\pipe\hark-<hash of the path>`), created with a DACL that grants
//!   the owner alone, as the name's first instance (a pipe another process
//!   made first is refused, not joined), local clients only; both ends
//!   compare the other process's user SID with their own. Files are not
//!   given modes: hark's directories are in the user's profile, whose
//!   inherited ACL is the user's (and SYSTEM's and the administrators').
//!   This side runs under Wine in the Windows tier (`tests/wine`), bar what
//!   Wine cannot show (a second user, the first-instance refusal); no
//!   Windows machine was at hand.
//!
//! [`Stream`] is a connected socket, [`split`] its two halves,
//! [`Listener`] what [`accept`] takes connections from.

#[cfg(target_os = "linux")]
pub mod pages;
pub mod shell_link;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// Opens a file only its owner may read or write (0600 where files have
/// modes), creating it.
pub fn private_file(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// `command` as PATH finds it (a path is taken as it is); on Windows each
/// runnable extension is tried too (npm installs `claude.cmd`).
pub fn find_program(command: &std::path::Path) -> Option<std::path::PathBuf> {
    let candidates = |path: std::path::PathBuf| {
        let mut all = vec![path.clone()];
        if cfg!(windows) && path.extension().is_none() {
            all.extend(["exe", "cmd", "bat"].map(|ext| path.with_extension(ext)));
        }
        all
    };
    if command.components().count() > 1 {
        return candidates(command.to_owned())
            .into_iter()
            .find(|p| runnable(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .flat_map(|dir| candidates(dir.join(command)))
        .find(|p| runnable(p))
}

/// Where `hark` (a path to it) can be started from once this process is
/// gone, for what outlives it (an agent's MCP config, the autostart entry).
/// Run from an AppImage (`APPIMAGE`, mounted at `APPDIR`), that is the
/// AppImage itself, which runs `hark` with its arguments; the mount goes
/// when the AppImage exits.
pub fn lasting_hark(hark: std::path::PathBuf) -> std::path::PathBuf {
    let appimage = std::env::var_os("APPIMAGE").map(std::path::PathBuf::from);
    let appdir = std::env::var_os("APPDIR");
    match (appimage, appdir) {
        (Some(appimage), Some(appdir)) if hark.starts_with(&appdir) && appimage.is_file() => {
            appimage
        }
        _ => hark,
    }
}
