//! Starting hark at login: the XDG autostart entry (`$XDG_CONFIG_HOME/
//! autostart/dev.hark.app.desktop`, `~/.config/autostart` when unset) that
//! desktop sessions on Linux read, naming `hark app`.
//!
//! Written by hand rather than with `auto-launch` (the crate
//! `tauri-plugin-autostart` uses): its Linux side always writes to
//! `~/.config/autostart` and ignores `XDG_CONFIG_HOME`, which the XDG
//! autostart specification says is where the entry goes. macOS and Windows
//! (a LaunchAgent, a Run key) are not done yet.

use std::io;
use std::path::{Path, PathBuf};

use crate::files::NoHomeError;

/// The entry's file name: the app's identifier (`tauri.conf.json`).
pub const ENTRY: &str = "dev.hark.app.desktop";

/// Where the autostart entry goes.
pub fn entry_path() -> Result<PathBuf, NoHomeError> {
    let base = directories::BaseDirs::new().ok_or(NoHomeError::Unset)?;
    Ok(base.config_dir().join("autostart").join(ENTRY))
}

/// A word of a desktop entry's `Exec` line, quoted as the Desktop Entry
/// Specification requires: in double quotes, with `"`, `` ` ``, `$` and
/// `\` escaped by a backslash (and `%` doubled, not being a field code).
fn exec_word(word: &str) -> String {
    let mut quoted = String::from("\"");
    for c in word.chars() {
        match c {
            '"' | '`' | '$' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '%' => quoted.push_str("%%"),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    // The entry's own escapes: a backslash in a string value is written twice.
    quoted.replace('\\', "\\\\")
}

/// The desktop entry that starts `hark app` with this `hark`; `autostart`
/// marks it for the session's autostart.
pub fn desktop_entry(hark: &Path, autostart: bool) -> String {
    let mut entry = format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=hark\n\
         GenericName=Operator console\n\
         Comment=Answer the questions of your headless AI agents\n\
         Exec={} app\n\
         Icon=dev.hark.app\n\
         Terminal=false\n\
         Categories=Development;Utility;\n",
        exec_word(&hark.display().to_string())
    );
    if autostart {
        entry.push_str("X-GNOME-Autostart-enabled=true\n");
    }
    entry
}

/// Writes the autostart entry for `hark`; returns where.
pub fn enable(hark: &Path) -> Result<PathBuf, AutostartError> {
    let path = entry_path()?;
    let write = || -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, desktop_entry(hark, true))
    };
    write().map_err(|source| AutostartError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Removes the autostart entry; says whether there was one, and where.
pub fn disable() -> Result<(PathBuf, bool), AutostartError> {
    let path = entry_path()?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok((path, true)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((path, false)),
        Err(source) => Err(AutostartError::Io { path, source }),
    }
}

/// Whether the autostart entry is there.
pub fn is_enabled() -> bool {
    entry_path().is_ok_and(|path| path.exists())
}

/// Why the autostart entry could not be written or removed.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error(transparent)]
    NoHome(#[from] NoHomeError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exec_line_quotes_the_path_as_the_specification_says() {
        let entry = desktop_entry(Path::new("/opt/my apps/$hark \"1\"/100%/hark"), true);
        let exec = entry.lines().find(|l| l.starts_with("Exec=")).unwrap();
        assert_eq!(
            exec,
            r#"Exec="/opt/my apps/\\$hark \\"1\\"/100%%/hark" app"#
        );
        assert!(entry.contains("X-GNOME-Autostart-enabled=true"));
        assert!(!desktop_entry(Path::new("/usr/bin/hark"), false).contains("Autostart"));
    }
}
