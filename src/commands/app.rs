//! `hark app` (or plain `hark`): the desktop app.

use crate::commands::Failed;
use crate::exit::ExitStatus;

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
