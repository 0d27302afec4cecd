//! Keeps every child a test or a benchmark starts away from the real user's
//! session: no inherited `HARK_*`, `XDG_*` or `DBUS_*` variable, and `HOME`,
//! the XDG dirs, `HARK_CONFIG`, `HARK_DATA_DIR` and `HARK_SOCKET` all inside
//! a temp dir, so neither the user's config, store, running app, session bus
//! nor notification server is touched, whatever state hark learns to keep
//! next. Only the X display (`DISPLAY`, `XAUTHORITY`, set by `xvfb-run`) is
//! shared.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// Why a sandbox could not be laid out.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot create a temp dir")]
    TempDir(#[source] std::io::Error),
    #[error("cannot create {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A private root for the children's home, config, data and sockets, and
/// the directory the binaries under test are in. Clones share the root,
/// which is removed when the last of them drops.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: Arc<tempfile::TempDir>,
    /// Where `hark`, `hark-app` and their siblings are.
    bin_dir: PathBuf,
    /// Set on every command after the sandbox's own variables (a session
    /// bus, what a test's fake agent reads).
    env: Vec<(OsString, OsString)>,
}

/// The XDG variables pointed into the sandbox, and their directory there;
/// and its own temp dir, so that what one test's runs leave there (a run
/// killed by SIGKILL) is swept by its own next run, not another test's.
const SANDBOX_DIRS: [(&str, &str); 6] = [
    ("XDG_CONFIG_HOME", "home/.config"),
    ("XDG_DATA_HOME", "home/.local/share"),
    ("XDG_STATE_HOME", "home/.local/state"),
    ("XDG_CACHE_HOME", "home/.cache"),
    ("XDG_RUNTIME_DIR", "runtime"),
    ("TMPDIR", "tmp"),
];

/// Where the tests' temp dirs go: not in /tmp, since a confined run's
/// agent has a private /tmp, and what a test reads back from it (the fake
/// agent's log, the files it wrote) must be where the test can see it.
pub fn outside_tmp() -> PathBuf {
    let var_tmp = Path::new("/var/tmp");
    match var_tmp.is_dir() {
        true => var_tmp.to_path_buf(),
        false => std::env::temp_dir(),
    }
}

/// A fresh temp dir in [`outside_tmp`].
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(outside_tmp()).expect("a temp dir")
}

impl Sandbox {
    /// Lays out a fresh temp dir named `PREFIX…` (owner-only, as hark
    /// wants) for the binaries in `bin_dir`.
    pub fn new(prefix: &str, bin_dir: &Path) -> Result<Sandbox, SandboxError> {
        let root = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(outside_tmp())
            .map_err(SandboxError::TempDir)?;
        for (_, dir) in SANDBOX_DIRS {
            let dir = root.path().join(dir);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|source| SandboxError::CreateDir { path: dir, source })?;
        }
        Ok(Sandbox {
            root: Arc::new(root),
            bin_dir: bin_dir.to_owned(),
            env: Vec::new(),
        })
    }

    /// The same sandbox, whose commands also get `name=value`.
    pub fn with_env(&self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Sandbox {
        let mut sandbox = self.clone();
        sandbox
            .env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        sandbox
    }

    /// The same sandbox, on the session bus at `address`.
    pub fn on_bus(&self, address: &str) -> Sandbox {
        self.with_env("DBUS_SESSION_BUS_ADDRESS", address)
    }

    /// The temp dir itself.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A file or directory inside the sandbox.
    pub fn path(&self, name: impl AsRef<Path>) -> PathBuf {
        self.root().join(name)
    }

    /// The app socket `HARK_SOCKET` names (hark creates its directory;
    /// nothing listens there unless a daemon or the app is started).
    pub fn socket(&self) -> PathBuf {
        self.path("run/hark.sock")
    }

    /// The config file `HARK_CONFIG` names: absent unless someone writes it.
    pub fn config(&self) -> PathBuf {
        self.path("no-config.toml")
    }

    /// The store's directory, `HARK_DATA_DIR`.
    pub fn data_dir(&self) -> PathBuf {
        self.path("data")
    }

    /// A binary of the build under test.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// `program` with the sandboxed environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("HARK_")
                || name_text.starts_with("XDG_")
                || name_text.starts_with("DBUS_")
            {
                command.env_remove(&name);
            }
        }
        command.env("HOME", self.path("home"));
        for (var, dir) in SANDBOX_DIRS {
            command.env(var, self.path(dir));
        }
        command
            .env("HARK_CONFIG", self.config())
            .env("HARK_DATA_DIR", self.data_dir())
            .env("HARK_SOCKET", self.socket());
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    /// `hark ARGS` with the sandboxed environment.
    pub fn hark<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.command(self.bin("hark"));
        command.args(args);
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_get_the_sandbox_and_none_of_the_callers_session() {
        let sandbox = Sandbox::new("hark-harness-", Path::new("/bin"))
            .unwrap()
            .on_bus("unix:path=/nowhere");
        let command = sandbox.hark(["inbox"]);
        let env: Vec<(String, Option<String>)> = command
            .get_envs()
            .map(|(k, v)| {
                let v = v.map(|v| v.to_string_lossy().into_owned());
                (k.to_string_lossy().into_owned(), v)
            })
            .collect();
        let set = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.clone())
        };
        assert_eq!(command.get_program(), "/bin/hark");
        assert_eq!(
            set("HARK_SOCKET"),
            Some(sandbox.socket().display().to_string())
        );
        assert_eq!(
            set("HARK_CONFIG"),
            Some(sandbox.config().display().to_string())
        );
        assert_eq!(
            set("DBUS_SESSION_BUS_ADDRESS").as_deref(),
            Some("unix:path=/nowhere")
        );
        assert!(Path::new(&set("XDG_RUNTIME_DIR").unwrap()).is_dir());
        assert!(
            set("HOME")
                .unwrap()
                .starts_with(&*sandbox.root().to_string_lossy())
        );
    }
}
