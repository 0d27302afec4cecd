//! Confinement: what `hark run` starts runs where the operator's side of
//! hark does not exist (SPEC §8e).
//!
//! The agent runs as the operator's user, so whatever of hark's it can reach
//! it can use: the operator socket answers questions, the store holds every
//! answer, a paused run's file holds its API keys, the config widens the
//! read-only gate, the display and the session bus press the modal's and the
//! notification's buttons. Watching the process tree cannot close that (a
//! helper that double-forks or `setsid`s leaves the tree), so for the agents
//! hark starts, those places are taken out of the agent's world instead:
//!
//! - [`Places`]: what to hide (the socket directory, the data directory),
//!   what to make read-only (the config), what to keep (the working
//!   directory, `$HOME`, the run's own directory with its ask socket), which
//!   temp directories are made private, and whether the display and the
//!   session bus stay reachable;
//! - [`bwrap`]: on Linux, bubblewrap's command-line prefix for them (user,
//!   mount and PID namespaces);
//! - [`seatbelt`]: on macOS, the `sandbox-exec` profile denying them;
//! - on Windows, the job object every agent already starts in, which a
//!   process cannot leave, is the membership test (`platform::windows`).
//!
//! [`Confinement`] is what a run ends up with, and says so to every surface:
//! confined by a mechanism, unavailable here (and why), or turned off.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub mod bwrap;
#[cfg(target_os = "linux")]
pub mod landlock;
pub mod seatbelt;

pub use crate::model::run::Confinement;

pub use crate::config::Confine as Options;

/// What the agent's world is made of.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Places {
    /// Directories or files of the operator's side that must not exist for
    /// the agent (an empty directory or an empty file stands in their place).
    pub hide: Vec<PathBuf>,
    /// What the agent may read but never change (the config).
    pub read_only: Vec<PathBuf>,
    /// What must stay as it is, even inside a private temp directory: the
    /// working directory, `$HOME`, the run's own directory, the ssh agent.
    pub keep: Vec<PathBuf>,
    /// Temp directories made private (empty, the agent's own).
    pub private: Vec<PathBuf>,
    /// Variables the agent must not see (the display's, the bus's).
    pub unset: Vec<&'static str>,
    /// An empty file of hark's own, put in the place of a hidden file (a
    /// bound `/dev/null` would not do: bubblewrap's binds are `nodev`).
    pub empty: Option<PathBuf>,
    /// hark's own directories among [`Places::hide`] and
    /// [`Places::read_only`]: they must exist (owner-only) before the agent
    /// starts, or the mechanism would make them, wider, in their place.
    pub own_dirs: Vec<PathBuf>,
}

const DISPLAY_VARS: [&str; 3] = ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"];
const BUS_VARS: [&str; 1] = ["DBUS_SESSION_BUS_ADDRESS"];

/// Where hark's own places are, and what of the user's session leads to
/// the operator, read from this process's environment.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// The app socket (`HARK_SOCKET` or the default).
    pub socket: Option<PathBuf>,
    /// The store's file (`HARK_DATA_DIR/hark.db` or the default).
    pub store: Option<PathBuf>,
    /// The config file (`HARK_CONFIG` or the default) and whether it is
    /// the default one, in a directory of hark's own.
    pub config: Option<(PathBuf, bool)>,
    pub home: Option<PathBuf>,
    pub runtime_dir: Option<PathBuf>,
    pub temp_dir: PathBuf,
    /// `DBUS_SESSION_BUS_ADDRESS`.
    pub bus: Option<String>,
    /// `XAUTHORITY`.
    pub xauthority: Option<PathBuf>,
    /// `SSH_AUTH_SOCK`.
    pub ssh_agent: Option<PathBuf>,
    /// The directories of the programs the run starts (`hark` itself, for
    /// the agent's MCP server and hook; the agent), kept even where they
    /// lie in a private temp directory.
    pub programs: Vec<PathBuf>,
    /// The files of secrets the config names wherever they are (a TLS key,
    /// the hub's nkey or `.creds`): hidden as hark's own directories are.
    pub secrets: Vec<PathBuf>,
    /// `PATH`'s directories.
    pub path: Vec<PathBuf>,
}

impl Session {
    /// This process's.
    pub fn current() -> Session {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Session {
            socket: crate::bridge::socket::app_socket_path().ok(),
            store: crate::store::Store::default_path().ok(),
            config: crate::config::Config::path()
                .map(|path| (path, crate::env::var_os(crate::env::CONFIG).is_none())),
            home: var("HOME").map(PathBuf::from),
            runtime_dir: var("XDG_RUNTIME_DIR").map(PathBuf::from),
            temp_dir: std::env::temp_dir(),
            bus: var("DBUS_SESSION_BUS_ADDRESS").and_then(|v| v.into_string().ok()),
            xauthority: var("XAUTHORITY").map(PathBuf::from),
            ssh_agent: var("SSH_AUTH_SOCK").map(PathBuf::from),
            programs: std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
                .into_iter()
                .collect(),
            secrets: Vec::new(),
            path: var("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
        }
    }
}

impl Places {
    /// The places of a run working in `cwd`, whose own directory (its ask
    /// socket, its MCP config) is `run_dir`.
    pub fn of(session: &Session, cwd: &Path, run_dirs: &[&Path], options: &Options) -> Places {
        let mut places = Places::default();
        places.keep.push(cwd.to_owned());
        places.keep.extend(session.home.clone());
        places.keep.extend(run_dirs.iter().map(|d| d.to_path_buf()));
        places.keep.extend(session.ssh_agent.clone());
        places.keep.extend(session.programs.iter().cloned());
        places.private.push(PathBuf::from("/tmp"));
        if session.temp_dir != Path::new("/tmp") {
            places.private.push(session.temp_dir.clone());
        }
        // A directory of hark's own is hidden whole; one that holds what the
        // agent needs (a socket named in $HOME) only the file itself.
        let keep = places.keep.clone();
        let own_dir = |file: &Path| -> PathBuf {
            match file.parent() {
                Some(dir) if dir != Path::new("/") && !keep.iter().any(|k| k.starts_with(dir)) => {
                    dir.to_owned()
                }
                _ => file.to_owned(),
            }
        };
        let mut hide: Vec<PathBuf> = Vec::new();
        let mut own_dirs = Vec::new();
        for file in [&session.socket, &session.store].into_iter().flatten() {
            let place = own_dir(file);
            if &place != file {
                own_dirs.push(place.clone());
            }
            hide.push(place);
        }
        // The config is hidden whole, not only kept from changes: it names
        // the operator's secrets (the push topic and token, the hub's
        // credential) or holds them. The agent's side of hark reads the
        // run's own copy of what it needs ([`AGENT_CONFIG`], read-only).
        if let Some((config, default)) = &session.config {
            let place = match default {
                true => own_dir(config),
                false => config.clone(),
            };
            if &place != config {
                own_dirs.push(place.clone());
            }
            hide.push(place);
        }
        hide.extend(session.secrets.iter().cloned());
        for dir in run_dirs {
            places.read_only.push(dir.join(AGENT_CONFIG));
        }
        places.read_only.extend(runs_code_later(session, cwd));
        if let Some(runtime) = &session.runtime_dir {
            // systemd's user manager starts what it is asked outside any
            // confinement (`systemd-run --user`); the accessibility bus
            // presses any window's buttons.
            hide.push(runtime.join("systemd"));
            hide.push(runtime.join("at-spi"));
        }
        if !options.session_bus {
            places.unset.extend(BUS_VARS);
            if let Some(runtime) = &session.runtime_dir {
                hide.push(runtime.join("bus"));
            }
            if let Some(path) = session.bus.as_deref().and_then(bus_socket) {
                hide.push(path);
            }
        }
        if !options.display {
            places.unset.extend(DISPLAY_VARS);
            // The X sockets are in /tmp/.X11-unix, private already; the
            // cookies are not.
            hide.extend(session.xauthority.clone());
            hide.extend(session.home.as_ref().map(|h| h.join(".Xauthority")));
            if let Some(runtime) = &session.runtime_dir {
                hide.extend(wayland_sockets(runtime));
            }
        }
        for path in hide {
            if !places.hide.contains(&path) {
                places.hide.push(path);
            }
        }
        places.empty = session
            .store
            .as_deref()
            .and_then(Path::parent)
            .map(|dir| dir.join("empty"));
        places.own_dirs = own_dirs;
        // What hides the operator's side wins over what is kept inside it.
        let hidden = places.hide.clone();
        places
            .keep
            .retain(|k| !hidden.iter().any(|h| k.starts_with(h)));
        places
            .read_only
            .retain(|r| !hidden.iter().any(|h| r.starts_with(h)));
        places
    }
}

/// The socket file of a `unix:path=…` bus address (an abstract one has no
/// file; see "Not covered" in docs/src/security/session-bus.md).
fn bus_socket(address: &str) -> Option<PathBuf> {
    address.split(';').find_map(|one| {
        let rest = one.strip_prefix("unix:")?;
        rest.split(',')
            .find_map(|kv| kv.strip_prefix("path="))
            .map(PathBuf::from)
    })
}

/// The Wayland compositor's sockets in the runtime directory.
fn wayland_sockets(runtime: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(runtime) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("wayland-") && !name.ends_with(".lock")
        })
        .map(|e| e.path())
        .collect()
}

/// The file in a run's own directory that holds the part of the config the
/// agent's side of hark reads (`mcp-operator-ask`'s rules, the gate's
/// policy), handed to it as `HARK_CONFIG`: read-only inside.
pub const AGENT_CONFIG: &str = "config.toml";

/// What in `$HOME` runs code as the operator later, outside the
/// confinement: shell startup files, the login session's and systemd's
/// user units, git's and the agents' own configs (their hooks and `notify`
/// programs), ssh's config and `rc`. Read-only inside where they exist (a
/// missing one is not made: an empty `.bash_profile` would stop bash
/// reading `.profile`).
pub const RUNS_CODE_IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".mkshrc",
    ".config/fish",
    ".config/nushell",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd",
    ".gitconfig",
    ".config/git",
    ".ssh",
    ".claude/settings.json",
    ".codex/config.toml",
];

/// What in the working directory's repository runs code as the operator
/// later: git's hooks and its config (`core.hooksPath`, `core.fsmonitor`).
pub const RUNS_CODE_IN_REPO: &[&str] = &[".git/hooks", ".git/config"];

/// The places of [`RUNS_CODE_IN_HOME`] and [`RUNS_CODE_IN_REPO`] that exist,
/// and the directories on `PATH` inside `$HOME` (a `git` written into
/// `~/.local/bin` is run by the operator's next `git`).
fn runs_code_later(session: &Session, cwd: &Path) -> Vec<PathBuf> {
    let mut places = Vec::new();
    if let Some(home) = &session.home {
        places.extend(RUNS_CODE_IN_HOME.iter().map(|p| home.join(p)));
        places.extend(
            session
                .path
                .iter()
                .filter(|dir| dir.starts_with(home) && dir.as_path() != home.as_path())
                .cloned(),
        );
    }
    if let Some(repo) = cwd.ancestors().find(|dir| dir.join(".git").is_dir()) {
        places.extend(RUNS_CODE_IN_REPO.iter().map(|p| repo.join(p)));
    }
    places.retain(|p| p.symlink_metadata().is_ok());
    places.sort();
    places.dedup();
    places
}

/// How a run's agent is to be started: its confinement, and the program
/// and arguments to put before its own command line (none when it is not
/// confined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub confinement: Confinement,
    pub prefix: Vec<OsString>,
    /// The agent is started scoped out of abstract unix sockets made
    /// outside the run, by Landlock (Linux 6.12+; see [`landlock`]).
    pub scoped: bool,
}

impl Plan {
    fn without(confinement: Confinement) -> Plan {
        Plan {
            confinement,
            prefix: Vec::new(),
            scoped: false,
        }
    }

    /// What the agent cannot reach beyond hark's side, for the run's
    /// message and `hark doctor`.
    pub fn scope_note(&self) -> &'static str {
        match (self.confinement.is_confined(), self.scoped) {
            (true, true) => {
                "; abstract unix sockets made outside the run (an X server's, a bus's) are out of reach (Landlock)"
            }
            (true, false) if cfg!(target_os = "linux") => {
                "; abstract unix sockets (an X server's @/tmp/.X11-unix) stay reachable: this kernel has no Landlock scope (Linux 6.12+)"
            }
            _ => "",
        }
    }
}

/// Starts `command` (the plan's prefix, then the agent) as `plan` says:
/// scoped by Landlock where it takes the scope. Runs on a tokio runtime.
pub fn spawn(
    plan: &Plan,
    mut command: tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    #[cfg(target_os = "linux")]
    if plan.scoped {
        return landlock::spawn_scoped(command, &tokio::runtime::Handle::current());
    }
    let _ = plan;
    command.spawn()
}

/// Plans the confinement of an agent working in `cwd` whose run's own
/// directories are `run_dirs`; `wanted` is false for `--no-confine`. hark's
/// own directories are made (owner-only) if missing, so that they can be
/// hidden. Whether the mechanism will really start is only known when it
/// does: a refusal then fails the run (closed), rather than running it
/// unconfined under a confined label.
pub fn plan(
    session: &Session,
    cwd: &Path,
    run_dirs: &[&Path],
    options: &Options,
    wanted: bool,
) -> Plan {
    if !(wanted && options.enabled) {
        return Plan::without(Confinement::Off);
    }
    let program = match available() {
        Ok(program) => program,
        Err(why) => {
            return Plan::without(Confinement::Unavailable {
                reason: why.to_string(),
            });
        }
    };
    let places = Places::of(session, cwd, run_dirs, options);
    for dir in &places.own_dirs {
        if let Err(e) = crate::files::ensure_private_dir(dir) {
            return Plan::without(Confinement::Unavailable {
                reason: format!("cannot make {} to hide it: {e}", dir.display()),
            });
        }
    }
    // A config named outside hark's directory but not there yet is made,
    // empty and owner-only (the defaults), so that it can be hidden; else
    // the agent could write one there that the operator's side would read.
    // (What is read-only exists: the run's own copy is written first, and
    // what runs later is guarded only where it is.)
    if let Some((file, false)) = &session.config
        && file.symlink_metadata().is_err()
    {
        let made =
            crate::platform::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
                .open(file);
        if let Err(e) = made {
            return Plan::without(Confinement::Unavailable {
                reason: format!("cannot make {} to hide it: {e}", file.display()),
            });
        }
    }
    if let Some(empty) = &places.empty
        && let Err(e) = make_empty(empty)
    {
        return Plan::without(Confinement::Unavailable {
            reason: format!("cannot make {}: {e}", empty.display()),
        });
    }
    let mut prefix = vec![program.into_os_string()];
    let by = if cfg!(target_os = "macos") {
        prefix.push("-p".into());
        prefix.push(seatbelt::profile(&places, &session.temp_dir, run_dirs).into());
        prefix.push("--".into());
        seatbelt::NAME
    } else {
        prefix.extend(bwrap::args(&places, cwd, bwrap::Kind::of));
        bwrap::NAME
    };
    Plan {
        confinement: Confinement::Confined { by: by.to_owned() },
        prefix,
        #[cfg(target_os = "linux")]
        scoped: landlock::available().is_ok(),
        #[cfg(not(target_os = "linux"))]
        scoped: false,
    }
}

/// Makes `path` an empty file, read-only, if it is not one already.
fn make_empty(path: &Path) -> std::io::Result<()> {
    match path.symlink_metadata() {
        Ok(meta) if meta.is_file() && meta.len() == 0 => Ok(()),
        Ok(_) => Err(std::io::Error::other("it exists and is not an empty file")),
        Err(_) => {
            std::fs::write(path, b"")?;
            let mut perms = std::fs::metadata(path)?.permissions();
            perms.set_readonly(true);
            std::fs::set_permissions(path, perms)
        }
    }
}

/// Why this machine cannot confine what hark starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("bubblewrap is not installed (apt install bubblewrap)")]
    NoBwrap,
    #[error(
        "this system does not allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone or user.max_user_namespaces)"
    )]
    NoUserNamespaces,
    #[error(
        "AppArmor restricts unprivileged user namespaces here and no profile lets bwrap make one (copy /usr/share/apparmor/extra-profiles/bwrap-userns-restrict into /etc/apparmor.d and reload AppArmor)"
    )]
    AppArmor,
    #[error("sandbox-exec is missing")]
    NoSandboxExec,
    /// Windows: a job object tells the agent's processes apart (the daemon
    /// refuses them the operator's requests), but hides nothing from them.
    #[error(
        "on Windows hark's pipe, store and config are not hidden from the agent (it is held in its run's job object, which it cannot leave, and the daemon refuses operator requests from any process in it)"
    )]
    Platform,
}

/// The mechanism's program, or why this machine has none.
#[cfg(target_os = "linux")]
pub fn available() -> Result<PathBuf, Unavailable> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|v| v.trim().to_owned())
            .ok()
    };
    let program =
        crate::platform::find_program(Path::new(bwrap::PROGRAM)).ok_or(Unavailable::NoBwrap)?;
    // Debian's and older kernels' switch, and the namespace limit.
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0")
        || read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0")
    {
        return Err(Unavailable::NoUserNamespaces);
    }
    // Ubuntu 23.10+: only programs with an AppArmor profile that allows it
    // may make one; Ubuntu's own for bwrap is an extra profile, not loaded
    // by default.
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1")
        && !crate::platform::is_root()
        && !Path::new("/etc/apparmor.d/bwrap-userns-restrict").exists()
    {
        return Err(Unavailable::AppArmor);
    }
    Ok(program)
}

/// The mechanism's program, or why this machine has none.
#[cfg(target_os = "macos")]
pub fn available() -> Result<PathBuf, Unavailable> {
    let program = PathBuf::from(seatbelt::PROGRAM);
    match program.exists() {
        true => Ok(program),
        false => Err(Unavailable::NoSandboxExec),
    }
}

/// Windows has no mechanism that hides hark's pipe and files from the
/// agent: it is held in its run's job object, which it cannot leave, and
/// the daemon refuses the job's members the operator's requests. That is no
/// confinement, and the run is labelled "not confined" for it.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn available() -> Result<PathBuf, Unavailable> {
    Err(Unavailable::Platform)
}

#[cfg(test)]
mod tests;
