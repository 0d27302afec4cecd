//! Keeps every child the benchmark starts away from the real user's hark:
//! no inherited `HARK_*` or `XDG_*` variable, and `HOME`, the XDG dirs,
//! `HARK_CONFIG`, `HARK_DATA_DIR` and `HARK_SOCKET` all inside the temp dir,
//! so neither the config, the store nor a running app is read or written,
//! whatever state hark learns to keep next.

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

    /// `program` with the sandboxed environment. `HARK_SOCKET` names a socket
    /// nothing listens on; `HARK_CONFIG` a file that does not exist.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("HARK_") || name_text.starts_with("XDG_") {
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
            .env("HARK_SOCKET", self.path("nobody-listens/hark.sock"));
        command
    }
}
