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
        None => launch(),
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
/// the `hark` that serves MCP never loads GTK or WebKit.
pub fn launch() -> Result<ExitStatus, Failed> {
    use std::os::unix::process::CommandExt;
    let here = std::env::current_exe().map_err(Failed::ThisHark)?;
    let app = here.with_file_name("hark-app");
    if !app.exists() {
        return Err(Failed::AppMissing(app));
    }
    let source = std::process::Command::new(&app).exec();
    Err(Failed::AppExec { path: app, source })
}
