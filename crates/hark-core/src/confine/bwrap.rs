//! Linux: bubblewrap's command line for a run's [`Places`].
//!
//! Why bubblewrap, measured here (SPEC §8e): it is what Claude Code's and
//! Codex's own Linux sandboxes use, so a machine that runs their sandboxes
//! runs hark's; it makes unprivileged user, mount and PID namespaces with
//! no code of hark's running between fork and exec (the workspace has no
//! unsafe code for a pre-exec step); and it adds 6–7 ms to a run's start
//! (`./bench/confine`). Landlock alone
//! cannot do the job: it only allows (a directory cannot be denied inside
//! an allowed one), and it does not cover connecting to a pathname socket.
//!
//! What the agent gets:
//! - its own PID namespace (`--unshare-pid`), so nothing it starts can leave
//!   by double fork or `setsid`: every process of the run dies with it
//!   (`--die-with-parent`), and no process outside is visible or signalled;
//! - a fresh procfs, so `/proc/PID/root` of a process outside does not
//!   lead back to the real file system; it *replaces* the host's rather than
//!   covering it (every entry of `/` but `/proc` is bound one by one), since
//!   the kernel refuses a nested sandbox (Claude Code's own bwrap) a new
//!   procfs while an overmounted one exists;
//! - no capabilities (`--cap-drop ALL`; root keeps `CAP_SETFCAP` for a
//!   nested sandbox), so nothing inside can unmount what hides hark;
//! - its own session (`--new-session`): no `TIOCSTI` into the terminal that
//!   started it, which would type commands into the operator's shell;
//! - the rest of the file system as it is, but: hark's socket directory and
//!   data directory replaced by empty ones, the config read-only, private
//!   temp directories with only the run's own directory (and the working
//!   directory and `$HOME`, where they lie in one) bound back, and the
//!   display's and the bus's sockets replaced by empty files;
//! - every directory above a hidden or read-only place made a mount point
//!   of itself, so that renaming one (`mv ~/.local/share x`, then writing a
//!   fake `~/.local/share/hark`) fails with EBUSY instead of planting files
//!   that hark reads outside.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::Places;

/// The mechanism's name, as records and surfaces show it.
pub const NAME: &str = "bubblewrap";

/// The program: `bwrap` on `PATH`.
pub const PROGRAM: &str = "bwrap";

/// What a path is on the host, as the command line needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    /// A file, a socket: anything not a directory.
    File,
    Symlink,
    Missing,
}

impl Kind {
    /// What `path` is, not following a final symlink.
    pub fn of(path: &Path) -> Kind {
        match path.symlink_metadata() {
            Ok(meta) if meta.is_symlink() => Kind::Symlink,
            Ok(meta) if meta.is_dir() => Kind::Dir,
            Ok(_) => Kind::File,
            Err(_) => Kind::Missing,
        }
    }
}

/// One mount, in the order bwrap makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    /// The host's path, as it is, at the same place.
    Bind(PathBuf),
    /// The host's path, read-only.
    ReadOnly(PathBuf),
    /// An empty, private directory.
    Tmpfs(PathBuf),
    /// An empty, read-only file ([`Places::empty`]).
    Null(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::Bind(p) | Mount::ReadOnly(p) | Mount::Tmpfs(p) | Mount::Null(p) => p,
        }
    }

    /// Whether the host's file system shows through at this mount.
    fn shows_host(&self) -> bool {
        matches!(self, Mount::Bind(_) | Mount::ReadOnly(_))
    }

    /// Of two mounts at one depth, which goes first: what is kept shows
    /// through a private directory, and what is hidden goes last.
    fn rank(&self) -> u8 {
        match self {
            Mount::Tmpfs(_) => 0,
            Mount::Bind(_) => 1,
            Mount::ReadOnly(_) => 2,
            Mount::Null(_) => 3,
        }
    }
}

fn depth(path: &Path) -> usize {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

/// The arguments before the agent's own command line: `bwrap … --`.
/// `kind` says what each path is on the host (`Kind::of`, or a test's).
pub fn args(places: &Places, cwd: &Path, kind: impl Fn(&Path) -> Kind) -> Vec<OsString> {
    let mut args = namespaces();
    push_root(&mut args, places, &kind);
    push(&mut args, "--proc", ["/proc"]);
    let empty = places.empty.clone().unwrap_or_default();
    for mount in &mounts(places, &kind) {
        let path = mount.path().as_os_str();
        match mount {
            Mount::Bind(_) => push(&mut args, "--bind", [path, path]),
            Mount::ReadOnly(_) => push(&mut args, "--ro-bind", [path, path]),
            Mount::Tmpfs(_) => push(&mut args, "--tmpfs", [path]),
            Mount::Null(_) => push(&mut args, "--ro-bind", [empty.as_os_str(), path]),
        }
    }
    push(&mut args, "--chdir", [cwd.as_os_str()]);
    for var in &places.unset {
        push(&mut args, "--unsetenv", [*var]);
    }
    push(
        &mut args,
        "--setenv",
        [crate::env::CONFINED, NAME].map(std::ffi::OsStr::new),
    );
    args.push("--".into());
    args
}

/// The namespaces and capabilities the agent runs with.
fn namespaces() -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--unshare-user",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
    ]
    .map(OsString::from)
    .to_vec();
    // No capability in the sandbox's user namespace, whose mounts hide
    // hark's places: started by root, bubblewrap would keep them all, and a
    // tool's `umount` uncovered the real socket, store and config (measured,
    // docs/src/agents/claude-code.md). CAP_SETFCAP alone lets root's nested
    // sandbox (Claude Code's, Codex's) map its uid; a nested namespace
    // cannot unmount what it inherits (the kernel locks those mounts).
    push(&mut args, "--cap-drop", ["ALL"]);
    if crate::platform::is_root() {
        push(&mut args, "--cap-add", ["CAP_SETFCAP"]);
    }
    args
}

/// `/` entry by entry, all but `/proc` (made fresh after) and the private
/// temp directories.
fn push_root(args: &mut Vec<OsString>, places: &Places, kind: &impl Fn(&Path) -> Kind) {
    let root = Path::new("/");
    let mut entries: Vec<(PathBuf, Kind)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != Path::new("/proc") && !places.private.contains(p))
        .map(|p| {
            let k = kind(&p);
            (p, k)
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, k) in &entries {
        match k {
            Kind::Dir => push(args, "--dev-bind", [path.as_os_str(), path.as_os_str()]),
            Kind::Symlink => {
                if let Ok(target) = std::fs::read_link(path) {
                    push(args, "--symlink", [target.as_os_str(), path.as_os_str()]);
                }
            }
            Kind::File => push(args, "--bind", [path.as_os_str(), path.as_os_str()]),
            Kind::Missing => {}
        }
    }
}

/// The mounts over `/`'s entries, in the order bwrap makes them: the
/// private temp directories with what is kept in them, the places guarded
/// (hidden or read-only), and the directories above those pinned.
fn mounts(places: &Places, kind: &impl Fn(&Path) -> Kind) -> Vec<Mount> {
    let private = |path: &Path| places.private.iter().any(|p| path.starts_with(p));
    let mut mounts: Vec<Mount> = Vec::new();
    for temp in &places.private {
        if kind(temp) == Kind::Dir {
            mounts.push(Mount::Tmpfs(temp.clone()));
        }
    }
    for keep in &places.keep {
        if private(keep) && kind(keep) != Kind::Missing {
            mounts.push(Mount::Bind(keep.clone()));
        }
    }
    let guarded = guarded(places, kind, &mounts);
    let pinned = pinned(&mounts, &guarded);
    mounts.extend(pinned);
    mounts.extend(guarded);
    mounts.sort_by_key(|m| (depth(m.path()), m.rank()));
    mounts
}

/// Whether the host shows through at `path`: the deepest mount above it
/// decides, `/`'s own entries when there is none.
fn shows_host(mounts: &[Mount], path: &Path) -> bool {
    mounts
        .iter()
        .filter(|m| path.starts_with(m.path()))
        .max_by_key(|m| (depth(m.path()), m.rank()))
        .is_none_or(Mount::shows_host)
}

/// The hidden and read-only places where the host shows through `mounts`.
fn guarded(places: &Places, kind: &impl Fn(&Path) -> Kind, mounts: &[Mount]) -> Vec<Mount> {
    let mut guarded: Vec<Mount> = Vec::new();
    for path in &places.hide {
        if !shows_host(mounts, path) {
            continue;
        }
        match kind(path) {
            Kind::Dir => guarded.push(Mount::Tmpfs(path.clone())),
            Kind::File | Kind::Symlink if places.empty.is_some() => {
                guarded.push(Mount::Null(path.clone()))
            }
            _ => {}
        }
    }
    for path in &places.read_only {
        if !shows_host(mounts, path) {
            continue;
        }
        match kind(path) {
            Kind::Missing if places.empty.is_some() => guarded.push(Mount::Null(path.clone())),
            Kind::Missing => {}
            _ => guarded.push(Mount::ReadOnly(path.clone())),
        }
    }
    guarded
}

/// Every directory above a guarded place, a mount point of itself, so that
/// it cannot be renamed away (`/`'s entries already are).
fn pinned(mounts: &[Mount], guarded: &[Mount]) -> Vec<Mount> {
    let mut pinned: Vec<Mount> = Vec::new();
    for guard in guarded {
        for above in guard.path().ancestors().skip(1) {
            if depth(above) < 2 || !shows_host(mounts, above) {
                continue;
            }
            let pin = Mount::Bind(above.to_owned());
            let taken = mounts.iter().chain(&pinned).any(|m| m.path() == above);
            if !taken {
                pinned.push(pin);
            }
        }
    }
    pinned
}

fn push<'a, S: AsRef<std::ffi::OsStr> + ?Sized + 'a>(
    args: &mut Vec<OsString>,
    flag: &str,
    values: impl IntoIterator<Item = &'a S>,
) {
    args.push(flag.into());
    args.extend(values.into_iter().map(|v| v.as_ref().to_owned()));
}
