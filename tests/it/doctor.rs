//! `hark doctor` against a healthy setup (a daemon, a private D-Bus session
//! with dunst, trayer's system tray, agents on PATH, a sound store) and
//! against each missing or broken piece.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use crate::support::*;
use hark_harness::PATIENCE;
use hark_harness::desktop::{Session, TrayHost};
use serde_json::json;

/// A directory holding `claude` and `codex` that print their versions,
/// and the system's `bwrap` (confinement's, and with `socat` the Bash
/// sandbox's of a read-only run).
fn agents_on_path() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for program in ["bwrap", "socat"] {
        std::os::unix::fs::symlink(on_path(program), dir.path().join(program)).unwrap();
    }
    for (name, version) in [
        ("claude", "2.1.332 (Claude Code)"),
        ("codex", "codex-cli 0.171.0"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `name` on this process's PATH.
fn on_path(name: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} is not installed (scripts/setup installs it)"))
}

/// `hark doctor` in `sandbox` with `path` as its PATH.
fn doctor(sandbox: &Sandbox, path: &std::path::Path, display: bool) -> Output {
    let mut command = sandbox.command(bin_dir().join("hark"));
    command.arg("doctor").env("PATH", path);
    if !display {
        command.env_remove("DISPLAY");
    }
    command.output().unwrap()
}

/// The report's line for `what`, and the hint under it if any.
fn line<'a>(report: &'a str, what: &str) -> (&'a str, Option<&'a str>) {
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.split_once(' ')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(&format!("{what}:")))
        })
        .unwrap_or_else(|| panic!("no {what} line in:\n{report}"));
    let hint = lines
        .get(at + 1)
        .filter(|l| l.trim_start().starts_with("hint:"))
        .copied();
    (lines[at], hint)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_healthy_setup_is_all_ok() {
    let _turn = crate::support::desktop::ONE_AT_A_TIME.lock().await;
    let session =
        Session::start(&sandbox()).unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let _tray = TrayHost::start(&session, PATIENCE)
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let daemon = serve_in(&session.sandbox, json!({}), &[]);
    let agents = agents_on_path();
    let out = doctor(&daemon.sandbox, agents.path(), true);
    let report = stdout(&out);
    assert!(out.status.success(), "{report}");
    for what in [
        "daemon",
        "socket",
        "notifications",
        "tray",
        "claude",
        "codex",
        "confinement",
        "read-only runs",
        "store",
    ] {
        let (said, hint) = line(&report, what);
        assert!(said.starts_with("ok "), "{said}\n{report}");
        assert_eq!(hint, None, "{report}");
    }
    assert!(
        line(&report, "daemon")
            .0
            .contains(daemon.sandbox.socket().to_str().unwrap())
    );
    assert!(
        line(&report, "notifications").0.contains("dunst")
            && line(&report, "notifications")
                .0
                .contains("with action buttons"),
        "{report}"
    );
    assert!(
        line(&report, "tray").0.contains("XEmbed system tray"),
        "{report}"
    );
    assert!(
        line(&report, "claude").0.contains("2.1.332 (Claude Code)"),
        "{report}"
    );
    assert!(
        line(&report, "codex").0.contains("codex-cli 0.171.0"),
        "{report}"
    );
    assert!(line(&report, "store").0.contains("is sound"), "{report}");
    assert!(
        line(&report, "confinement")
            .0
            .contains("confined by bubblewrap"),
        "{report}"
    );
    assert!(
        line(&report, "read-only runs")
            .0
            .contains("bwrap and socat are on PATH"),
        "{report}"
    );
}

#[test]
fn read_only_runs_without_socat_are_missing_beside_a_working_confinement() {
    let sandbox = sandbox();
    let bwrap_only = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(on_path("bwrap"), bwrap_only.path().join("bwrap")).unwrap();
    let out = doctor(&sandbox, bwrap_only.path(), false);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        line(&report, "confinement").0.starts_with("ok "),
        "{report}"
    );
    let (said, hint) = line(&report, "read-only runs");
    assert!(
        said.starts_with("missing ") && said.contains("there is no socat on PATH"),
        "{report}"
    );
    assert_eq!(
        hint.map(str::trim),
        Some("hint: apt install bubblewrap socat")
    );
}

#[test]
fn each_missing_piece_is_named_with_a_hint() {
    let sandbox = sandbox();
    let nothing = tempfile::tempdir().unwrap();
    let bare = sandbox.with_env(
        "DBUS_SESSION_BUS_ADDRESS",
        format!("unix:path={}", sandbox.path("no-bus").display()),
    );
    let out = doctor(&bare, nothing.path(), false);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for (what, hint) in [
        ("daemon", "hark app"),
        ("notifications", "D-Bus"),
        ("tray", "add a tray"),
        ("agents", "npm install"),
        ("confinement", "apt install bubblewrap"),
        ("read-only runs", "apt install bubblewrap socat"),
    ] {
        let (said, found) = line(&report, what);
        assert!(said.starts_with("missing "), "{said}\n{report}");
        assert!(found.is_some_and(|h| h.contains(hint)), "{what}: {report}");
    }
    // An agent you may not use is worth a note, not a failure of its own.
    assert!(line(&report, "codex").0.starts_with("note "), "{report}");
    assert!(line(&report, "store").0.contains("none yet"), "{report}");
}

#[test]
fn a_socket_directory_open_to_others_and_a_damaged_store_are_problems() {
    let sandbox = sandbox();
    let run = sandbox.socket().parent().unwrap().to_owned();
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(sandbox.data_dir()).unwrap();
    std::fs::write(
        sandbox.data_dir().join("hark.db"),
        b"this is not a database, it only sits where one would",
    )
    .unwrap();
    let agents = agents_on_path();
    let out = doctor(&sandbox, agents.path(), false);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    let (socket, hint) = line(&report, "socket");
    assert!(
        socket.starts_with("problem ") && socket.contains("open to other users (mode 755)"),
        "{report}"
    );
    assert!(hint.is_some_and(|h| h.contains("chmod 700")), "{report}");
    let (store, hint) = line(&report, "store");
    assert!(store.starts_with("problem "), "{report}");
    assert!(
        hint.is_some_and(|h| h.contains("move the file aside")),
        "{report}"
    );
    assert!(line(&report, "claude").0.starts_with("ok "), "{report}");
}
