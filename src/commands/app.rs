//! `hark app` (or plain `hark`): the desktop app, and whether it starts at
//! login.

use hark_core::autostart;

use crate::cli::{AppArgs, Switch};
use crate::commands::{Failed, this_hark};
use crate::exit::ExitStatus;

/// Starts the app, or with `--autostart` turns its start at login on or
/// off, or prints its desktop entry.
pub fn run(args: AppArgs) -> Result<ExitStatus, Failed> {
    if let Some(hark) = args.desktop_entry {
        print!("{}", autostart::desktop_entry(&hark, false));
        return Ok(ExitStatus::Success);
    }
    match args.autostart {
        None => launch(args.hub.map(|hub| hub.to_string()).as_deref()),
        Some(Switch::On) => {
            let path = autostart::enable(&this_hark()?)?;
            println!("hark starts at login: {}", path.display());
            Ok(ExitStatus::Success)
        }
        Some(Switch::Off) => {
            let (path, was) = autostart::disable()?;
            if was {
                println!(
                    "hark no longer starts at login (removed {})",
                    path.display()
                );
            } else {
                println!(
                    "hark does not start at login (there is no {})",
                    path.display()
                );
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// Replaces this process with the desktop app installed next to `hark`, so
/// the `hark` that serves MCP never loads GTK or WebKit. (Windows has no
/// exec: there `hark` runs the app and ends with it.)
pub fn launch(hub: Option<&str>) -> Result<ExitStatus, Failed> {
    let here = std::env::current_exe().map_err(Failed::ThisHark)?;
    let app = here.with_file_name(if cfg!(windows) {
        "hark-app.exe"
    } else {
        "hark-app"
    });
    if !app.exists() {
        return Err(Failed::AppMissing(app));
    }
    let mut command = std::process::Command::new(&app);
    if let Some(url) = hub {
        command.env(hark_core::env::HUB, url);
    }
    #[cfg(unix)]
    let source = {
        use std::os::unix::process::CommandExt;
        command.exec()
    };
    #[cfg(windows)]
    let source = match command.status() {
        Ok(status) if status.success() => return Ok(ExitStatus::Success),
        Ok(status) => std::io::Error::other(format!("the app ended with {status}")),
        Err(e) => e,
    };
    Err(Failed::AppExec { path: app, source })
}
