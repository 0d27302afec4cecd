//! Starting hark at login, as each platform's sessions do it, naming
//! `hark app`:
//! - Linux: the XDG autostart entry (`$XDG_CONFIG_HOME/autostart/
//!   dev.hark.app.desktop`, `~/.config/autostart` when unset);
//! - macOS: a LaunchAgent (`~/Library/LaunchAgents/dev.hark.app.plist`,
//!   `RunAtLoad`), which launchd starts at the next login;
//! - Windows: the `hark` value of the user's Run key
//!   (`HKCU\Software\Microsoft\Windows\CurrentVersion\Run`).
//!
//! Written by hand rather than with `auto-launch` (the crate
//! `tauri-plugin-autostart` uses): its Linux side always writes to
//! `~/.config/autostart` and ignores `XDG_CONFIG_HOME`, which the XDG
//! autostart specification says is where the entry goes. The macOS and
//! Windows sides compile in CI and have never run.

use std::io;
use std::path::{Path, PathBuf};

use crate::files::NoHomeError;

/// The entry's file name: the app's identifier (`tauri.conf.json`).
pub const ENTRY: &str = "dev.hark.app.desktop";

/// The LaunchAgent's label, and its file's name before `.plist`.
pub const LAUNCH_AGENT: &str = "dev.hark.app";

/// Where the autostart entry goes (on Windows, the registry value, named
/// as a path).
pub fn entry_path() -> Result<PathBuf, NoHomeError> {
    #[cfg(windows)]
    return Ok(PathBuf::from(format!(
        "{}\\{RUN_VALUE}",
        crate::platform::RUN_KEY
    )));
    #[cfg(not(windows))]
    {
        let base = directories::BaseDirs::new().ok_or(NoHomeError::Unset)?;
        #[cfg(target_os = "macos")]
        return Ok(base
            .home_dir()
            .join("Library/LaunchAgents")
            .join(format!("{LAUNCH_AGENT}.plist")));
        #[cfg(not(target_os = "macos"))]
        return Ok(base.config_dir().join("autostart").join(ENTRY));
    }
}

/// The Run key's value that starts hark.
#[cfg(windows)]
const RUN_VALUE: &str = "hark";

/// The LaunchAgent that starts `hark app` with this `hark` at login.
pub fn launch_agent(hark: &Path) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \t<key>Label</key>\n\t<string>{LAUNCH_AGENT}</string>\n\
         \t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>{}</string>\n\t\t<string>app</string>\n\t</array>\n\
         \t<key>RunAtLoad</key>\n\t<true/>\n\
         \t<key>ProcessType</key>\n\t<string>Interactive</string>\n\
         </dict>\n\
         </plist>\n",
        escape(&hark.display().to_string())
    )
}

/// The Run key's command line: `"HARK" app`.
pub fn run_command(hark: &Path) -> String {
    format!("\"{}\" app", hark.display())
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
    write_entry(&path, hark).map_err(|source| AutostartError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(windows)]
fn write_entry(_path: &Path, hark: &Path) -> io::Result<()> {
    crate::platform::set_run_value(RUN_VALUE, &run_command(hark))
}

#[cfg(not(windows))]
fn write_entry(path: &Path, hark: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    #[cfg(target_os = "macos")]
    let entry = launch_agent(hark);
    #[cfg(not(target_os = "macos"))]
    let entry = desktop_entry(hark, true);
    std::fs::write(path, entry)
}

/// Removes the autostart entry; says whether there was one, and where.
pub fn disable() -> Result<(PathBuf, bool), AutostartError> {
    let path = entry_path()?;
    #[cfg(windows)]
    let removed = crate::platform::remove_run_value(RUN_VALUE);
    #[cfg(not(windows))]
    let removed = std::fs::remove_file(&path);
    match removed {
        Ok(()) => Ok((path, true)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((path, false)),
        Err(source) => Err(AutostartError::Io { path, source }),
    }
}

/// Whether the autostart entry is there.
pub fn is_enabled() -> bool {
    #[cfg(windows)]
    return crate::platform::has_run_value(RUN_VALUE);
    #[cfg(not(windows))]
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

    #[test]
    fn the_launch_agent_runs_hark_app_at_load_with_the_path_escaped() {
        let agent = launch_agent(Path::new("/Applications/R&D <x>/hark"));
        assert!(agent.starts_with("<?xml version=\"1.0\""), "{agent}");
        assert!(
            agent.contains(
                "<key>ProgramArguments</key>\n\t<array>\n\t\t<string>/Applications/R&amp;D &lt;x&gt;/hark</string>\n\t\t<string>app</string>"
            ),
            "{agent}"
        );
        assert!(agent.contains("<key>RunAtLoad</key>\n\t<true/>"), "{agent}");
        assert!(agent.contains("<string>dev.hark.app</string>"), "{agent}");
        assert_eq!(
            run_command(Path::new(r"C:\Program Files\hark\hark.exe")),
            r#""C:\Program Files\hark\hark.exe" app"#
        );
    }
}
