//! Keeps every child a benchmark starts away from the real user's session:
//! no inherited `HARK_*`, `XDG_*` or `DBUS_*` variable, and `HOME`, the XDG
//! dirs, `HARK_CONFIG`, `HARK_DATA_DIR` and `HARK_SOCKET` all inside the temp
//! dir, so neither the user's config, store, running app, session bus nor
//! notification server is touched, whatever state hark learns to keep next.
//! Only the X display (`DISPLAY`, `XAUTHORITY`, set by `xvfb-run`) is shared.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A private root for the children's home, config, data and sockets.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
}

/// The XDG variables pointed into the sandbox, and their directory there.
const XDG_DIRS: [(&str, &str); 5] = [
    ("XDG_CONFIG_HOME", "home/.config"),
    ("XDG_DATA_HOME", "home/.local/share"),
    ("XDG_STATE_HOME", "home/.local/state"),
    ("XDG_CACHE_HOME", "home/.cache"),
    ("XDG_RUNTIME_DIR", "runtime"),
];

impl Sandbox {
    /// Lays out the directories under `root` (owner-only, as hark wants).
    pub fn new(root: &Path) -> Result<Sandbox, String> {
        for (_, dir) in XDG_DIRS {
            let dir = root.join(dir);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        Ok(Sandbox {
            root: root.to_owned(),
        })
    }

    /// A file or directory inside the sandbox.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The app socket `HARK_SOCKET` names (the app creates its directory;
    /// nothing listens there unless a benchmark starts the app).
    pub fn socket(&self) -> PathBuf {
        self.path("run/hark.sock")
    }

    /// `program` with the sandboxed environment; `bus` is the private
    /// session bus, when there is one yet.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>, bus: Option<&str>) -> Command {
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
        for (var, dir) in XDG_DIRS {
            command.env(var, self.path(dir));
        }
        command
            .env("HARK_CONFIG", self.path("no-such-config.toml"))
            .env("HARK_DATA_DIR", self.path("data"))
            .env("HARK_SOCKET", self.socket());
        if let Some(bus) = bus {
            command.env("DBUS_SESSION_BUS_ADDRESS", bus);
        }
        command
    }
}
