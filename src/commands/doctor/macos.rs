//! `hark doctor`'s desktop checks on macOS: the app bundle macOS gives
//! notifications to (their permission is the bundle's, in System Settings),
//! the menu bar the app's icon lives in, and the LaunchAgent that starts it
//! at login. Compiled by the macOS cargo check; not run.

use super::{Finding, Verdict};

/// The bundle and its notifications, the menu bar, the LaunchAgent.
pub(super) fn checks() -> Vec<Finding> {
    vec![
        notifications(),
        Finding::ok("tray", "the menu bar, where the app's icon lives"),
        super::autostart("`hark app --autostart on` writes the LaunchAgent"),
    ]
}

/// macOS gives notifications to an app bundle alone, and asks its user once
/// whether it may: the answer is the bundle's, not this command's to read.
fn notifications() -> Finding {
    let exe = std::env::current_exe().unwrap_or_default();
    let bundle = exe
        .ancestors()
        .find(|dir| dir.extension().is_some_and(|ext| ext == "app"));
    match bundle {
        Some(bundle) => Finding::not(
            Verdict::Note,
            "notifications",
            format!("from the app bundle {}", bundle.display()),
            "whether they may show is asked once, by the app; see System Settings → Notifications → hark",
        ),
        None => Finding::not(
            Verdict::Missing,
            "notifications",
            format!(
                "{} is not inside an app bundle, and macOS gives notifications only to one",
                exe.display()
            ),
            "install hark.app (its `hark` is inside it); without it, questions still open the app's window",
        ),
    }
}

/// sandbox-exec is part of macOS: without it, something is wrong here.
pub(super) fn unconfined(what: &'static str, reason: &str) -> Finding {
    Finding::not(
        Verdict::Missing,
        what,
        format!("agents hark starts would run unconfined: {reason}"),
        "sandbox-exec ships with macOS (/usr/bin/sandbox-exec); `hark run --no-confine` runs without",
    )
}

/// The mechanism is there and refused to start.
pub(super) const REFUSED_HINT: &str =
    "sandbox-exec refused the profile; `hark run --no-confine` runs without";

/// The mechanism cannot be started at all.
pub(super) const MISSING_HINT: &str = "sandbox-exec ships with macOS (/usr/bin/sandbox-exec)";

/// Claude Code's Bash sandbox is macOS's own.
pub(super) fn read_only_runs(what: &'static str) -> Finding {
    Finding::ok(
        what,
        "Claude Code's Bash sandbox uses macOS's own (sandbox-exec)",
    )
}
