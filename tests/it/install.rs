//! Installed and started the way desktop users expect: the autostart entry
//! (`hark app --autostart on|off`, and the tray's Start at login) in a
//! temp `XDG_CONFIG_HOME`.

use crate::support::desktop::Desktop;
use crate::support::*;

/// The autostart entry in `sandbox`'s `XDG_CONFIG_HOME`.
fn entry(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.path("home/.config/autostart/dev.hark.app.desktop")
}

#[test]
fn autostart_on_writes_the_xdg_entry_naming_this_hark_and_off_removes_it() {
    let sandbox = sandbox();
    let on = succeed(&sandbox, &["app", "--autostart", "on"]);
    let path = entry(&sandbox);
    assert!(
        stdout(&on).contains(path.to_str().unwrap()),
        "{}",
        stdout(&on)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let this_hark = bin_dir().join("hark");
    assert!(
        text.lines()
            .any(|l| l == format!("Exec=\"{}\" app", this_hark.display())),
        "{text}"
    );
    assert!(
        text.starts_with("[Desktop Entry]\nType=Application\n"),
        "{text}"
    );
    assert!(text.contains("X-GNOME-Autostart-enabled=true"), "{text}");

    let off = succeed(&sandbox, &["app", "--autostart", "off"]);
    assert!(
        stdout(&off).contains("no longer starts at login"),
        "{}",
        stdout(&off)
    );
    assert!(!path.exists());
    let again = succeed(&sandbox, &["app", "--autostart", "off"]);
    assert!(
        stdout(&again).contains("does not start at login"),
        "{}",
        stdout(&again)
    );

    let bad = hark(&sandbox, &["app", "--autostart", "maybe"]);
    assert_eq!(bad.status.code(), Some(2), "clap refuses it");
    assert!(!path.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trays_start_at_login_writes_and_removes_the_entry() {
    let desktop = Desktop::start_with(&[], true).await;
    let path = entry(&desktop.sandbox);
    // The menu: "Nothing is waiting", Open inbox, Start at login, Do not disturb, Quit.
    for on in [true, false] {
        let from = desktop.log.len();
        desktop.tray_menu(&["Up", "Up", "Up", "Return"]);
        let changed = desktop
            .log
            .wait_event_from(from, "autostart changed", hark_harness::PATIENCE, |_| true)
            .unwrap()
            .value;
        assert_eq!(changed["on"], on);
        assert_eq!(path.exists(), on, "{}", path.display());
    }
    desktop.stop().await;
}
