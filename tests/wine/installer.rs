//! The Windows installer (`scripts/windows/hark.nsi`, built by
//! `scripts/package --windows` in scripts/test-wine, its path in
//! `HARK_WINE_INSTALLER`), installed silently under Wine and uninstalled
//! the way Settings → Apps does it. The desktop app cannot be built here
//! (WebView2), so the installer holds a stand-in for `hark-app.exe` (an
//! empty program, `HARK_WINE_APP`), which is only copied and pointed at.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::support::{PATIENCE, Wine, processes_with, stderr, stdout};

/// The installer the tier built, which must be there when the tier runs.
fn built(var: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is unset: scripts/test-wine builds the installer"));
    assert!(path.is_file(), "{var}={} is not a file", path.display());
    path
}

/// `wine64 PROGRAM ARGS` (PROGRAM a Linux or a Windows path), to its end.
fn wine_output(wine: &Wine, program: &str, args: &[&str], debug: &str) -> Output {
    Command::new(&wine.wine)
        .arg(program)
        .args(args)
        .env("WINEDEBUG", debug)
        .stdin(Stdio::null())
        .output()
        .expect("wine runs")
}

/// A folder of this Wine user's profile (`%LOCALAPPDATA%`), as Windows
/// names it.
fn folder(wine: &Wine, var: &str) -> String {
    let out = wine_output(wine, "cmd.exe", &["/c", &format!("echo %{var}%")], "-all");
    let said = stdout(&out).trim().to_owned();
    assert!(said.starts_with(r"C:\"), "%{var}% is {said:?}");
    said
}

/// A `C:\…` path as Linux finds it in the Wine prefix.
fn unix(windows: &str) -> PathBuf {
    let prefix = PathBuf::from(std::env::var_os("WINEPREFIX").unwrap());
    let rest = windows.strip_prefix(r"C:\").expect("a path on C:");
    rest.split('\\')
        .fold(prefix.join("drive_c"), |path, part| path.join(part))
}

/// `reg query KEY`'s listing, or `None` when the key is not there.
fn reg_query(wine: &Wine, key: &str) -> Option<String> {
    let out = wine_output(wine, "reg.exe", &["query", key], "-all");
    out.status.success().then(|| stdout(&out))
}

/// The data of value `name` in a `reg query` listing.
fn reg_value<'a>(listing: &'a str, name: &str) -> Option<&'a str> {
    listing.lines().find_map(|line| {
        let mut words = line.trim().splitn(3, "    ");
        (words.next()? == name).then_some(())?;
        words.next()?;
        words.next()
    })
}

fn utf16(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

const UNINSTALL_KEY: &str = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\hark";
const ENVIRONMENT_KEY: &str = r"HKCU\Environment";
/// CLSID_ShellLink as a .lnk's header holds it (MS-SHLLINK 2.1).
const SHELL_LINK_CLSID: [u8; 16] = [
    0x01, 0x14, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46,
];

/// `hark-…-setup.exe /S` puts hark.exe, hark-ask.exe and the app in
/// %LOCALAPPDATA%\Programs\hark, a Start-menu shortcut to the app (its
/// AppUserModelID handed to the link's property store and committed), the
/// directory on the user's PATH, and an uninstaller in the Uninstall key;
/// the uninstaller the key names, run as Settings runs it, takes all of it
/// away again.
#[test]
fn the_installer_puts_hark_in_place_and_its_uninstaller_takes_it_away() {
    let Some(wine) = crate::support::wine() else {
        return;
    };
    let (setup, app) = (built("HARK_WINE_INSTALLER"), built("HARK_WINE_APP"));
    let dir_win = format!(r"{}\Programs\hark", folder(&wine, "LOCALAPPDATA"));
    let dir = unix(&dir_win);
    let start_menu = format!(
        r"{}\Microsoft\Windows\Start Menu\Programs",
        folder(&wine, "APPDATA")
    );
    let shortcut = unix(&format!(r"{start_menu}\hark.lnk"));
    assert!(!dir.exists() && !shortcut.exists(), "not installed before");

    // Wine's ShellLink keeps no property store (its SetValue and Commit are
    // stubs that say so on the `fixme` channel and return S_OK), so the
    // shortcut file cannot show the id here: its trace shows the installer
    // set it and committed it, and the exit code that each COM step
    // (loading the link, the store, saving it) succeeded.
    let installed = wine_output(&wine, setup.to_str().unwrap(), &["/S"], "-all,fixme+shell");
    let trace = stderr(&installed);
    assert_eq!(
        installed.status.code(),
        Some(0),
        "the installer succeeded (3: the shortcut was not given its AppUserModelID): {trace}"
    );
    for step in ["propertystore_SetValue", "propertystore_Commit"] {
        assert!(
            trace.contains(step),
            "the installer called the shortcut's IPropertyStore ({step}): {trace}"
        );
    }

    let hark = std::fs::read(dir.join("hark.exe")).expect("hark.exe is installed");
    assert!(hark == std::fs::read(wine.bin.join("hark.exe")).unwrap());
    let ask = std::fs::read(dir.join("hark-ask.exe")).expect("hark-ask.exe is installed beside it");
    assert!(ask == std::fs::read(wine.bin.join("hark-ask.exe")).unwrap());
    let installed_app = std::fs::read(dir.join("hark-app.exe")).expect("the app is installed");
    assert!(installed_app == std::fs::read(&app).unwrap());
    assert!(
        dir.join("uninstall.exe").is_file(),
        "the uninstaller is there"
    );
    assert_eq!(
        installed_hark(&wine, &dir_win, &["--version"]).trim(),
        format!("hark {}", env!("CARGO_PKG_VERSION"))
    );
    // Agents are pointed at the small server installed beside it.
    let config = installed_hark(&wine, &dir_win, &["mcp-config"]);
    let config: serde_json::Value = serde_json::from_str(config.trim()).unwrap();
    assert_eq!(
        config["mcpServers"]["operator"]["command"].as_str(),
        Some(format!(r"{dir_win}\hark-ask.exe").as_str()),
        "{config}"
    );

    shortcut_checks(&wine, &dir_win, &start_menu);

    let key = reg_query(&wine, UNINSTALL_KEY).expect("the Uninstall key is there");
    assert_eq!(reg_value(&key, "DisplayName"), Some("hark"), "{key}");
    assert_eq!(
        reg_value(&key, "DisplayVersion"),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        reg_value(&key, "InstallLocation"),
        Some(dir_win.as_str()),
        "{key}"
    );
    let quiet = reg_value(&key, "QuietUninstallString").expect("a silent uninstall command");
    let uninstaller = format!(r"{dir_win}\uninstall.exe");
    assert_eq!(quiet, format!(r#""{uninstaller}" /S"#));
    assert_eq!(
        reg_value(&key, "UninstallString"),
        Some(format!(r#""{uninstaller}""#).as_str())
    );
    let environment = reg_query(&wine, ENVIRONMENT_KEY).unwrap();
    let path = reg_value(&environment, "Path").expect("the user's PATH");
    assert!(
        path.split(';').any(|p| p == dir_win),
        "{dir_win} on the PATH: {path}"
    );

    uninstall(&wine, &uninstaller, &dir_win);
    assert!(!dir.exists(), "the install directory is gone");
    assert!(!shortcut.exists(), "the shortcut is gone");
    assert_eq!(reg_query(&wine, UNINSTALL_KEY), None, "the key is gone");
    let environment = reg_query(&wine, ENVIRONMENT_KEY).unwrap();
    let path = reg_value(&environment, "Path").unwrap_or_default();
    assert!(
        !path.split(';').any(|p| p == dir_win),
        "{dir_win} off the PATH: {path}"
    );
}

/// What the installed `hark.exe ARGS` printed, once it succeeded.
fn installed_hark(wine: &Wine, dir_win: &str, args: &[&str]) -> String {
    let out = wine_output(wine, &format!(r"{dir_win}\hark.exe"), args, "-all");
    assert!(out.status.success(), "hark.exe {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// The Start-menu shortcut is a shell link to the installed app, and
/// `hark doctor` reads it for the id it carries.
fn shortcut_checks(wine: &Wine, dir_win: &str, start_menu: &str) {
    let shortcut = unix(&format!(r"{start_menu}\hark.lnk"));
    let link = std::fs::read(&shortcut).expect("the Start-menu shortcut is there");
    assert_eq!(link[..4], [0x4C, 0, 0, 0], "a shell link's header");
    assert_eq!(link[4..20], SHELL_LINK_CLSID, "a shell link's header");
    assert!(
        contains(&link, &utf16(&format!(r"{dir_win}\hark-app.exe"))),
        "the shortcut starts the installed app"
    );

    // `hark doctor` reads the installed shortcut for the id it carries.
    let doctor = wine_output(wine, &format!(r"{dir_win}\hark.exe"), &["doctor"], "-all");
    let said = format!("{}{}", stdout(&doctor), stderr(&doctor));
    assert!(
        said.contains(&format!(r"Start-menu shortcut ({start_menu}\hark.lnk)")),
        "the doctor reads the shortcut: {said}"
    );
    assert!(!said.contains("hark has no Start-menu shortcut"), "{said}");
}

/// Runs `uninstaller /S` as Settings → Apps does: an NSIS uninstaller
/// copies itself to %TEMP%, starts the copy with `_?=DIR` (so that it can
/// delete its own file) and returns at once; the copy is waited for. (Its
/// output is not read: the copy inherits it, and reading it to its end
/// would wait for the copy unseen.)
fn uninstall(wine: &Wine, uninstaller: &str, dir_win: &str) {
    let status = Command::new(&wine.wine)
        .args([uninstaller, "/S"])
        .env("WINEDEBUG", "-all")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("wine runs the uninstaller");
    assert!(
        status.success(),
        "the uninstaller started its copy: {status}"
    );
    // Started before the original returned; its command line is Windows's.
    let copy = processes_with(&format!(r"_?={dir_win}\"));
    assert_eq!(copy.len(), 1, "the uninstaller's copy runs: {copy:?}");
    assert!(
        hark_harness::process::wait_gone(&copy, PATIENCE),
        "the uninstaller's copy ended"
    );
}
