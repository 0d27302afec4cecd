//! `hark doctor`'s desktop checks on Linux and the BSDs: the session's
//! D-Bus (the notification server, a StatusNotifier host) and the X server
//! (an XEmbed system tray), and what confining an agent takes there.

use super::{Finding, Verdict};

/// The notification server and the tray.
pub(super) fn checks() -> Vec<Finding> {
    match zbus::blocking::Connection::session() {
        Ok(bus) => vec![notifications(&bus), tray(Some(&bus))],
        Err(e) => vec![
            Finding::not(
                Verdict::Missing,
                "notifications",
                format!("no D-Bus session bus ({e})"),
                "hark's notifications need a desktop session's D-Bus (DBUS_SESSION_BUS_ADDRESS); without one, use `hark serve --prompter terminal`",
            ),
            tray(None),
        ],
    }
}

/// Confinement wanted and unavailable: bubblewrap, or the namespaces it needs.
pub(super) fn unconfined(what: &'static str, reason: &str) -> Finding {
    Finding::not(
        Verdict::Missing,
        what,
        format!("agents hark starts would run unconfined: {reason}"),
        "install bubblewrap (apt install bubblewrap), or allow unprivileged user namespaces",
    )
}

/// The mechanism is there and refused to start.
pub(super) const REFUSED_HINT: &str = "unprivileged user namespaces may be restricted here (Ubuntu 23.10+: load AppArmor's bwrap-userns-restrict profile); `hark run --no-confine` runs without";

/// The mechanism cannot be started at all.
pub(super) const MISSING_HINT: &str = "install bubblewrap (apt install bubblewrap)";

/// Where Claude Code's Bash sandbox needs nothing hark can check.
pub(super) fn read_only_runs(what: &'static str) -> Finding {
    Finding::not(
        Verdict::Note,
        what,
        "not checked on this system: the Bash sandbox `hark run --read-only` turns on in Claude Code is bubblewrap on Linux, sandbox-exec on macOS",
        "Codex's read-only sandbox is its own",
    )
}

/// The notification server, and whether it shows action buttons.
fn notifications(bus: &zbus::blocking::Connection) -> Finding {
    let call = |method: &str| {
        bus.call_method(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            Some("org.freedesktop.Notifications"),
            method,
            &(),
        )
    };
    let info = call("GetServerInformation")
        .and_then(|m| m.body().deserialize::<(String, String, String, String)>());
    let (name, _vendor, version, _spec) = match info {
        Ok(info) => info,
        Err(e) => {
            return Finding::not(
                Verdict::Missing,
                "notifications",
                format!("no notification server on the session bus ({e})"),
                "install and start one (dunst, your desktop's own, or `apt install notification-daemon`); the modal and the tray still work without it",
            );
        }
    };
    let actions = call("GetCapabilities")
        .and_then(|m| m.body().deserialize::<Vec<String>>())
        .map(|caps| caps.iter().any(|c| c == "actions"))
        .unwrap_or(false);
    if actions {
        Finding::ok(
            "notifications",
            format!("{name} {version}, with action buttons"),
        )
    } else {
        Finding::not(
            Verdict::Note,
            "notifications",
            format!("{name} {version}, without action buttons"),
            "questions cannot be answered from the notification; a click still opens the modal",
        )
    }
}

/// A tray to show hark's icon in: a StatusNotifier host on D-Bus, or an
/// XEmbed system tray on the X display.
fn tray(bus: Option<&zbus::blocking::Connection>) -> Finding {
    let watcher = bus.is_some_and(|bus| {
        bus.call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "NameHasOwner",
            &("org.kde.StatusNotifierWatcher",),
        )
        .and_then(|m| m.body().deserialize::<bool>())
        .unwrap_or(false)
    });
    if watcher {
        return Finding::ok(
            "tray",
            "a StatusNotifier host (org.kde.StatusNotifierWatcher)",
        );
    }
    match xembed_tray() {
        Some(display) => Finding::ok(
            "tray",
            format!("an XEmbed system tray on display {display}"),
        ),
        None => Finding::not(
            Verdict::Missing,
            "tray",
            "no StatusNotifier host and no XEmbed system tray",
            "add a tray to your panel (GNOME: the AppIndicator extension); without one, open the inbox with `hark inbox` or a notification",
        ),
    }
}

/// The X display whose screen has a system tray (`_NET_SYSTEM_TRAY_Sn` is
/// owned), if there is one.
fn xembed_tray() -> Option<String> {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::ConnectionExt;
    let display = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty())?;
    let (conn, screen) = x11rb::connect(Some(&display)).ok()?;
    let name = format!("_NET_SYSTEM_TRAY_S{screen}");
    let atom = conn
        .intern_atom(false, name.as_bytes())
        .ok()?
        .reply()
        .ok()?
        .atom;
    let owner = conn.get_selection_owner(atom).ok()?.reply().ok()?.owner;
    drop(conn.flush());
    (owner != x11rb::NONE).then_some(display)
}
