//! macOS: a Seatbelt profile (`sandbox-exec -p PROFILE --`) denying a run's
//! [`Places`], the mechanism Claude Code and Codex use there.
//!
//! A Seatbelt sandbox is inherited by everything the agent starts and
//! cannot be left, so a helper that `setsid`s or double-forks stays inside
//! it as a PID namespace keeps one on Linux. The profile allows by default
//! and denies hark's places: reading or writing the hidden ones, connecting
//! to a socket in them, writing the read-only ones, and other runs'
//! directories in the temp dir. macOS has no private temp directory or
//! separate display to give; the window server stays reachable (see "Not
//! covered by confinement" in docs/src/security/confinement.md). Generated
//! and unit-tested here; run only on macOS, which the project does not
//! test on.

use std::fmt::Write;
use std::path::Path;

use super::Places;

/// The mechanism's name, as records and surfaces show it.
pub const NAME: &str = "seatbelt";

/// The program.
pub const PROGRAM: &str = "/usr/bin/sandbox-exec";

/// A path as an SBPL string literal.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// A regex matching a path prefix, as SBPL's `regex` takes it.
fn regex_prefix(path: &Path, rest: &str) -> String {
    let text = path.to_string_lossy();
    let mut out = String::from("#\"^");
    for c in text.chars() {
        if "\\.^$|?*+()[]{}\"".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str(rest);
    out.push('"');
    out
}

/// The profile of a run whose own directories are `run_dirs`.
pub fn profile(places: &Places, temp_dir: &Path, run_dirs: &[&Path]) -> String {
    let mut p = String::from("(version 1)\n(allow default)\n");
    for path in &places.hide {
        let q = quoted(path);
        let _ = writeln!(
            p,
            "(deny file-read* file-write* (subpath {q}))\n(deny network-outbound (remote unix-socket (subpath {q})))"
        );
    }
    // Other runs' directories (their ask sockets), then this run's own: the
    // last matching rule wins.
    let others = regex_prefix(temp_dir, "/hark-run-");
    let _ = writeln!(
        p,
        "(deny file-read* file-write* (regex {others}))\n(deny network-outbound (remote unix-socket (regex {others})))"
    );
    for dir in run_dirs {
        let q = quoted(dir);
        let _ = writeln!(
            p,
            "(allow file-read* file-write* (subpath {q}))\n(allow network-outbound (remote unix-socket (subpath {q})))"
        );
    }
    // Last, so that the run's own copy of the config stays read-only in
    // its directory.
    for path in &places.read_only {
        let _ = writeln!(p, "(deny file-write* (subpath {}))", quoted(path));
    }
    p
}
