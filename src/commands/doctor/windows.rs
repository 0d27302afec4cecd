//! `hark doctor`'s desktop checks on Windows: the toasts the app shows and
//! the AppUserModelID they go under, the taskbar's notification area its
//! icon lives in, the Run key that starts it at login, and what a run's
//! job object does and does not do.

use hark_core::platform::{
    APP_ID, POWERSHELL_APP_ID, shortcut_app_id, start_menu_shortcut, user_dword,
    window_class_exists,
};

use super::{Finding, Verdict};

/// Where Windows keeps whether toasts are shown at all, and per app.
const PUSH_NOTIFICATIONS: &str = r"Software\Microsoft\Windows\CurrentVersion\PushNotifications";
const NOTIFICATION_SETTINGS: &str =
    r"Software\Microsoft\Windows\CurrentVersion\Notifications\Settings";

/// Toasts, the notification area, the Run key.
pub(super) fn checks() -> Vec<Finding> {
    vec![
        toasts(),
        notification_area(),
        super::autostart("`hark app --autostart on` adds the Run key's value"),
    ]
}

/// Whether toasts are shown to this user, and under which AppUserModelID:
/// the app's own when its Start-menu shortcut carries it, else
/// PowerShell's.
fn toasts() -> Finding {
    let what = "notifications";
    if user_dword(PUSH_NOTIFICATIONS, "ToastEnabled") == Some(0) {
        return Finding::not(
            Verdict::Missing,
            what,
            "toasts are turned off for this user",
            "turn them on in Settings → System → Notifications; without them, questions still open the app's window",
        );
    }
    let carried = shortcut_app_id();
    let own = matches!(&carried, Some(Some(id)) if id == APP_ID);
    let (id, whose) = match own {
        true => (APP_ID, "hark's"),
        false => (POWERSHELL_APP_ID, "Windows PowerShell's"),
    };
    if user_dword(&format!(r"{NOTIFICATION_SETTINGS}\{id}"), "Enabled") == Some(0) {
        return Finding::not(
            Verdict::Missing,
            what,
            format!("toasts of {id}, which hark's are sent under, are turned off"),
            format!("turn on {whose} notifications in Settings → System → Notifications"),
        );
    }
    let shortcut = start_menu_shortcut().unwrap_or_default();
    let shortcut = shortcut.display();
    if own {
        return Finding::ok(
            what,
            format!(
                "toasts, sent under hark's AppUserModelID ({APP_ID}), which its Start-menu shortcut carries ({shortcut})"
            ),
        );
    }
    let missing = match carried {
        None => format!("hark has no Start-menu shortcut ({shortcut})"),
        Some(_) => format!(
            "hark's Start-menu shortcut ({shortcut}) does not carry its AppUserModelID ({APP_ID})"
        ),
    };
    Finding::not(
        Verdict::Note,
        what,
        format!("toasts, sent under PowerShell's AppUserModelID ({POWERSHELL_APP_ID}): {missing}"),
        "install hark with its installer (hark-VERSION-x64-setup.exe), whose Start-menu shortcut gives its toasts an id of their own",
    )
}

/// The taskbar, whose notification area shows the app's icon.
fn notification_area() -> Finding {
    match window_class_exists("Shell_TrayWnd") {
        true => Finding::ok("tray", "the taskbar's notification area (Shell_TrayWnd)"),
        false => Finding::not(
            Verdict::Missing,
            "tray",
            "no taskbar notification area in this session (no Shell_TrayWnd window: Explorer is not running)",
            "the app's icon lives there; without it, open the inbox with `hark inbox` or a toast",
        ),
    }
}

/// Windows has no mechanism hark hides its files with; the run's job is
/// what tells the agent's processes apart. Nothing to install: a note.
pub(super) fn unconfined(what: &'static str, _reason: &str) -> Finding {
    Finding::not(
        Verdict::Note,
        what,
        "agents hark starts are not confined: they can read hark's store, paused runs and config, and open its pipe; each is held in its run's job object, which it cannot leave, and the daemon refuses operator requests from any process in it",
        "Windows offers hark nothing that hides its files from a process of the same user; keep what an agent must not read out of hark's data directory",
    )
}

/// Unused on Windows (no mechanism is started); named for the shared code.
pub(super) const REFUSED_HINT: &str = "";
pub(super) const MISSING_HINT: &str = "";

/// Claude Code's Bash sandbox is Linux's and macOS's.
pub(super) fn read_only_runs(what: &'static str) -> Finding {
    Finding::not(
        Verdict::Note,
        what,
        "Claude Code's Bash sandbox, which `hark run --read-only` requires of it (failIfUnavailable), is Linux's and macOS's: a read-only Claude run is refused by Claude Code here (not measured on Windows)",
        "a read-only Codex run uses Codex's own sandbox",
    )
}
