//! Installed and started the way desktop users expect: the autostart entry
//! (`hark app --autostart on|off`, and the tray's Start at login) in a
//! temp `XDG_CONFIG_HOME`, and `scripts/package`'s `.deb` and AppImage.

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

/// `scripts/package KIND` (`--deb`, `--appimage`) of the debug build: the
/// directory it wrote to (removed when dropped) and the package.
fn package(kind: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package");
    let built = std::process::Command::new(&script)
        .arg(kind)
        .arg("--bin-dir")
        .arg(bin_dir())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let package = std::path::PathBuf::from(stdout(&built).trim());
    (out, package)
}

/// `command` (in a sandbox), which must succeed: its stdout.
fn ran(mut command: std::process::Command, args: &[&str]) -> String {
    let out = command.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

#[test]
fn the_deb_installs_hark_the_app_its_icon_and_menu_entry_and_the_installed_hark_runs() {
    let (_out, deb) = package("--deb");
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        deb.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&format!("hark_{version}_")),
        "{}",
        deb.display()
    );
    let field = |name: &str| {
        let out = std::process::Command::new("dpkg-deb")
            .args(["-f"])
            .arg(&deb)
            .arg(name)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(field("Package"), "hark");
    assert_eq!(field("Version"), version);
    assert!(
        field("Depends").contains("libwebkit2gtk-4.1-0"),
        "{}",
        field("Depends")
    );

    // Into a scratch root, as `dpkg -x` unpacks it.
    let root = tempfile::tempdir().unwrap();
    let unpacked = std::process::Command::new("dpkg")
        .arg("-x")
        .arg(&deb)
        .arg(root.path())
        .status()
        .unwrap();
    assert!(unpacked.success());
    let installed = root.path().join("usr/bin/hark");
    assert!(
        root.path().join("usr/bin/hark-app").exists()
            && root.path().join("usr/bin/hark-window").exists(),
        "the app sits beside hark"
    );
    assert!(
        root.path().join("usr/bin/hark-ask").exists(),
        "the agent's server sits beside hark"
    );
    assert!(
        root.path()
            .join("usr/share/icons/hicolor/128x128/apps/dev.hark.app.png")
            .exists()
    );
    let entry = std::fs::read_to_string(
        root.path()
            .join("usr/share/applications/dev.hark.app.desktop"),
    )
    .unwrap();
    assert!(
        entry.lines().any(|l| l == r#"Exec="/usr/bin/hark" app"#),
        "{entry}"
    );
    // `man hark`: the page the installed hark renders of its own command
    // line, gzipped where man looks; and the completions where each shell
    // looks for a package's.
    let page = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(root.path().join("usr/share/man/man1/hark.1.gz"))
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&page.stdout).into_owned();
    assert!(page.contains(".TH hark 1"), "{page}");
    assert!(
        page.contains("mcp\\-operator\\-ask"),
        "every command is in it"
    );
    if let Ok(shown) = std::process::Command::new("man")
        .arg("-l")
        .arg(root.path().join("usr/share/man/man1/hark.1.gz"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    {
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains("An operator console for headless AI agents"),
            "{shown}"
        );
    }
    for (file, says) in [
        ("usr/share/bash-completion/completions/hark", "_hark()"),
        ("usr/share/zsh/vendor-completions/_hark", "#compdef hark"),
        (
            "usr/share/fish/vendor_completions.d/hark.fish",
            "complete -c hark",
        ),
    ] {
        let script = std::fs::read_to_string(root.path().join(file)).unwrap();
        assert!(
            script.contains(says) && script.contains("mcp-operator-ask"),
            "{file}"
        );
    }
    let sandbox = sandbox();
    let run = |args: &[&str]| ran(sandbox.command(&installed), args);
    assert_eq!(run(&["--version"]).trim(), format!("hark {version}"));
    // PowerShell's, which no package installs, from the command itself.
    assert!(run(&["completions", "powershell"]).contains("Register-ArgumentCompleter"));
    let config: serde_json::Value = serde_json::from_str(&run(&["mcp-config"])).unwrap();
    assert_eq!(
        config["mcpServers"]["operator"]["command"],
        installed.with_file_name("hark-ask").to_str().unwrap(),
        "the installed hark names the hark-ask installed beside it"
    );
}

#[test]
fn the_appimage_runs_hark_with_its_arguments_and_names_itself_not_its_mount() {
    let (_out, appimage) = package("--appimage");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        appimage.file_name().unwrap().to_str().unwrap(),
        format!("hark-{version}-x86_64.AppImage")
    );
    let head = std::fs::read(&appimage).unwrap()[..11].to_vec();
    assert_eq!(&head[..4], b"\x7fELF", "an executable");
    assert_eq!(&head[8..11], b"AI\x02", "the type 2 AppImage magic");

    // Run as a user without FUSE would (CI has none): from a temporary copy.
    let sandbox = sandbox();
    let run = |args: &[&str]| {
        let mut command = sandbox.command(&appimage);
        command.env("APPIMAGE_EXTRACT_AND_RUN", "1");
        ran(command, args)
    };
    assert_eq!(run(&["--version"]).trim(), format!("hark {version}"));
    let config: serde_json::Value = serde_json::from_str(&run(&["mcp-config"])).unwrap();
    assert_eq!(
        config["mcpServers"]["operator"]["command"],
        appimage.to_str().unwrap(),
        "an agent's config names the AppImage, which outlives its mount"
    );

    let unpack = tempfile::tempdir().unwrap();
    let extracted = std::process::Command::new(&appimage)
        .arg("--appimage-extract")
        .current_dir(unpack.path())
        .output()
        .unwrap();
    assert!(extracted.status.success());
    let root = unpack.path().join("squashfs-root");
    for file in [
        "AppRun",
        "usr/bin/hark",
        "usr/bin/hark-ask",
        "usr/bin/hark-app",
        "usr/bin/hark-window",
        "dev.hark.app.png",
    ] {
        assert!(root.join(file).exists(), "{file}");
    }
    let entry = std::fs::read_to_string(root.join("dev.hark.app.desktop")).unwrap();
    assert!(entry.lines().any(|l| l == r#"Exec="hark" app"#), "{entry}");
}
