//! `hark doctor`: what a new user needs to know, one line a check, each
//! with a `hint:` where something is missing — is a daemon serving and
//! where, is its socket private, is there a notification server and does it
//! take action buttons, is there a tray, which agents are on PATH and at
//! which versions, can `hark run` confine them, can a read-only run start,
//! is the store sound.
//!
//! The desktop checks are each platform's own, and speak of nothing the
//! platform does not have: on Linux (and the BSDs) the session's D-Bus
//! (zbus, as the app does) and the X server (x11rb), asked directly rather
//! than through tools that may not be installed ([`freedesktop`]); on
//! Windows toasts, the notification area and the Run key ([`windows`]); on
//! macOS the app bundle, the menu bar and the LaunchAgent ([`macos`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::bridge::{client, socket};
use hark_core::config::Config;
use hark_core::registry::StoreHealth;
use hark_core::store::Store;

use crate::commands::{Failed, runtime};
use crate::exit::ExitStatus;

#[cfg(all(unix, not(target_os = "macos")))]
mod freedesktop;
mod hub;
#[cfg(all(unix, not(target_os = "macos")))]
use freedesktop as desktop;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as desktop;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as desktop;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    /// Worth knowing, nothing to fix (an agent you may not use).
    Note,
    /// Something hark needs is not there.
    Missing,
    /// Something is there but wrong.
    Problem,
}

/// One line of the report.
#[derive(Debug)]
struct Finding {
    verdict: Verdict,
    what: &'static str,
    said: String,
    hint: Option<String>,
}

impl Finding {
    fn ok(what: &'static str, said: impl Into<String>) -> Finding {
        Finding {
            verdict: Verdict::Ok,
            what,
            said: said.into(),
            hint: None,
        }
    }

    fn not(
        verdict: Verdict,
        what: &'static str,
        said: impl Into<String>,
        hint: impl Into<String>,
    ) -> Finding {
        Finding {
            verdict,
            what,
            said: said.into(),
            hint: Some(hint.into()),
        }
    }

    fn print(&self) {
        let label = match self.verdict {
            Verdict::Ok => "ok",
            Verdict::Note => "note",
            Verdict::Missing => "missing",
            Verdict::Problem => "problem",
        };
        println!("{label:<8} {}: {}", self.what, self.said);
        if let Some(hint) = &self.hint {
            println!("         hint: {hint}");
        }
    }
}

/// Runs every check and prints the report; exits 1 when something is
/// missing or wrong.
pub fn run() -> Result<ExitStatus, Failed> {
    let config = Config::load()?;
    let socket = socket::app_socket_path()?;
    let rt = runtime()?;
    let (daemon, health) = rt.block_on(daemon(&socket));
    let mut findings = vec![daemon, socket_privacy(&socket)];
    findings.extend(desktop::checks());
    let claude = config
        .agent_command
        .clone()
        .unwrap_or_else(|| PathBuf::from("claude"));
    let agents = [
        ("claude", claude, "npm install -g @anthropic-ai/claude-code"),
        (
            "codex",
            PathBuf::from("codex"),
            "npm install -g @openai/codex",
        ),
    ];
    let found: Vec<Finding> = agents
        .iter()
        .map(|(what, command, install)| rt.block_on(agent(what, command, install)))
        .collect();
    if found.iter().all(|f| f.verdict != Verdict::Ok) {
        findings.push(Finding::not(
            Verdict::Missing,
            "agents",
            "neither Claude Code nor Codex is on PATH",
            "install one (npm install -g @anthropic-ai/claude-code, or @openai/codex), or name yours with agent_command in the config",
        ));
    }
    findings.extend(found);
    findings.push(confinement(&config));
    findings.push(read_only_runs());
    findings.push(store(health));
    if let Some(finding) = web(&config) {
        findings.push(finding);
    }
    if let Some(finding) = push(&config) {
        findings.push(finding);
    }
    let inline = config.inline_secrets();
    if !inline.is_empty() {
        findings.push(Finding::not(
            Verdict::Problem,
            "secrets",
            format!(
                "the config holds {} inline: anyone the file is shared with, and any agent not confined, reads it",
                inline.join(" and ")
            ),
            "`hark push setup` keeps the topic and token in the data directory (owner-only, hidden from confined agents); then remove them from the config",
        ));
    }
    if let Some(finding) = hub::check(&config, &rt) {
        findings.push(finding);
    }
    for finding in &findings {
        finding.print();
    }
    let fine = findings
        .iter()
        .all(|f| matches!(f.verdict, Verdict::Ok | Verdict::Note));
    Ok(if fine {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The phone push, when `[push]` is configured: whether the web surface
/// its buttons call is there with its public URL. (Nothing is published:
/// the server is named, the topic is not, as on a public server the topic
/// is what keeps the pushes private.)
fn push(config: &Config) -> Option<Finding> {
    let what = "phone push";
    match hark_web::push::PushOptions::from_config(
        config.push.as_ref(),
        config.web.as_ref(),
        config.web.is_some(),
        hark_core::secrets::PushSecrets::load,
    ) {
        Ok(options) => options.map(|o| {
            Finding::ok(
                what,
                format!(
                    "to ntfy at {}, {} detail; its buttons call {}",
                    o.ntfy.server,
                    match o.detail {
                        hark_core::config::PushDetail::Full => "full",
                        hark_core::config::PushDetail::TitleOnly => "title-only",
                    },
                    o.public_url
                ),
            )
        }),
        Err(e) => Some(Finding::not(
            Verdict::Problem,
            what,
            e.to_string(),
            "fix [push] or [web] in the config; `hark serve` refuses to start as it is",
        )),
    }
}

/// The web surface, when `[web]` is configured: whether it may listen where
/// it is told (TLS off loopback), its certificate loads, and something
/// answers there.
fn web(config: &Config) -> Option<Finding> {
    let what = "web surface";
    let options = match hark_web::WebOptions::from_config(config.web.as_ref(), None) {
        Ok(options) => options?,
        Err(e) => {
            return Some(Finding::not(
                Verdict::Problem,
                what,
                e.to_string(),
                "give both tls_cert and tls_key in [web], or neither",
            ));
        }
    };
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    if let Err(e) = hark_web::check(&options) {
        return Some(Finding::not(
            Verdict::Problem,
            what,
            e.to_string(),
            "fix [web] in the config; the daemon refuses to start the web surface as it is",
        ));
    }
    let up = std::net::TcpStream::connect_timeout(&options.listen, Duration::from_secs(1)).is_ok();
    Some(if up {
        Finding::ok(
            what,
            format!(
                "{scheme}://{} answers; pair a device with `hark web pair`",
                options.listen
            ),
        )
    } else {
        Finding::not(
            Verdict::Note,
            what,
            format!(
                "configured on {scheme}://{}, nothing listens there now",
                options.listen
            ),
            "the app or `hark serve` serves it while it runs",
        )
    })
}

/// Whether `hark run` can confine its agents here: the mechanism is there
/// and really starts (a confined `hark --version`, as a run would be).
fn confinement(config: &Config) -> Finding {
    use hark_core::confine::{self, Confinement};
    let what = "confinement";
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let plan = confine::plan(
        &confine::Session::current(),
        &cwd,
        &[],
        &config.confine,
        true,
    );
    let scope_note = plan.scope_note();
    let by = match plan.confinement {
        Confinement::Confined { by } => by,
        Confinement::Off => {
            return Finding::not(
                Verdict::Note,
                what,
                "turned off in the config ([confine] enabled = false): agents hark starts can reach its socket, store and config",
                "remove `enabled = false` from [confine] to confine them",
            );
        }
        Confinement::Unavailable { reason } => return desktop::unconfined(what, &reason),
    };
    let Some((program, args)) = plan.prefix.split_first() else {
        return Finding::ok(what, format!("by {by}"));
    };
    let hark = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hark"));
    let tried = std::process::Command::new(program)
        .args(args)
        .arg(hark)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    match tried {
        Ok(out) if out.status.success() => Finding::ok(
            what,
            format!(
                "agents hark starts run confined by {by}: hark's socket, store, config and the secret files it names do not exist for them{}",
                scope_note
            ),
        ),
        Ok(out) => Finding::not(
            Verdict::Problem,
            what,
            format!(
                "{by} is there but refused to start: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            desktop::REFUSED_HINT,
        ),
        Err(e) => Finding::not(
            Verdict::Problem,
            what,
            format!("cannot start {}: {e}", program.to_string_lossy()),
            desktop::MISSING_HINT,
        ),
    }
}

/// Whether the app starts at login (the platform's entry: the LaunchAgent,
/// the Run key's value); `how` says how to turn it on.
#[cfg_attr(not(any(windows, target_os = "macos")), allow(dead_code))]
fn autostart(how: &str) -> Finding {
    let entry = hark_core::autostart::entry_path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match hark_core::autostart::is_enabled() {
        true => Finding::ok("autostart", format!("the app starts at login ({entry})")),
        false => Finding::not(
            Verdict::Note,
            "autostart",
            format!("the app does not start at login (no {entry})"),
            how.to_owned(),
        ),
    }
}

/// Whether a read-only run can start here: it turns on Claude Code's own
/// Bash sandbox, which refuses to start without its programs (Codex's
/// read-only sandbox is Codex's own).
fn read_only_runs() -> Finding {
    use hark_core::agent::sandbox::{NEEDS, missing};
    let what = "read-only runs";
    if NEEDS.is_empty() {
        return desktop::read_only_runs(what);
    }
    let missing = missing();
    if missing.is_empty() {
        return Finding::ok(
            what,
            format!(
                "{} are on PATH, as Claude Code's Bash sandbox needs",
                NEEDS.join(" and ")
            ),
        );
    }
    Finding::not(
        Verdict::Missing,
        what,
        format!(
            "a read-only Claude run cannot start: its Bash sandbox needs {}, and there is no {} on PATH",
            NEEDS.join(" and "),
            missing.join(" or ")
        ),
        "apt install bubblewrap socat",
    )
}

/// Whether a daemon answers on the socket, and its store's health.
async fn daemon(socket: &Path) -> (Finding, Option<StoreHealth>) {
    match client::request(socket, &ClientFrame::Status).await {
        Ok(ServerFrame::Status { store }) => (
            Finding::ok("daemon", format!("serving at {}", socket.display())),
            store,
        ),
        Ok(other) => (
            Finding::not(
                Verdict::Problem,
                "daemon",
                format!("{} answered {other:?}", socket.display()),
                "something other than this hark serves there; stop it, or point HARK_SOCKET elsewhere",
            ),
            None,
        ),
        Err(e) => (
            Finding::not(
                Verdict::Missing,
                "daemon",
                format!("none ({e})"),
                "start the desktop app (`hark app`) or `hark serve --prompter terminal`; agents can ask only while one runs",
            ),
            None,
        ),
    }
}

/// On Windows the socket is a named pipe, owner-only by its DACL.
#[cfg(windows)]
fn socket_privacy(_socket: &Path) -> Finding {
    Finding::ok("socket", "a named pipe, owner-only by its DACL")
}

/// Whether the socket's directory (and the socket) are this user's alone.
#[cfg(unix)]
fn socket_privacy(socket: &Path) -> Finding {
    use hark_core::files::{PrivateDirError, private_dir_mode};
    use hark_core::platform::{own_user, owner};
    let Some(dir) = socket.parent() else {
        return Finding::not(
            Verdict::Problem,
            "socket",
            "has no directory",
            "set HARK_SOCKET to a path in a directory",
        );
    };
    let mode = match private_dir_mode(dir) {
        Ok(mode) => mode & 0o777,
        Err(PrivateDirError::Foreign { owner, me, .. }) => {
            return Finding::not(
                Verdict::Problem,
                "socket",
                format!(
                    "{} belongs to uid {owner}, not to you (uid {me})",
                    dir.display()
                ),
                "another user could serve or read your questions there: remove it, or set HARK_SOCKET to a directory of yours",
            );
        }
        Err(_) => {
            return Finding::ok(
                "socket",
                format!("{} is made owner-only when a daemon starts", dir.display()),
            );
        }
    };
    if mode & 0o077 != 0 {
        return Finding::not(
            Verdict::Problem,
            "socket",
            format!("{} is open to other users (mode {mode:o})", dir.display()),
            format!(
                "chmod 700 {} (a daemon makes it owner-only when it starts)",
                dir.display()
            ),
        );
    }
    if let Ok(meta) = std::fs::symlink_metadata(socket)
        && owner(&meta) != own_user()
    {
        return Finding::not(
            Verdict::Problem,
            "socket",
            format!("{} belongs to uid {}", socket.display(), owner(&meta)),
            "remove it; hark serves only its own socket",
        );
    }
    Finding::ok(
        "socket",
        format!("owner-only ({} is mode {mode:o}, yours)", dir.display()),
    )
}

/// An agent on PATH, and the version it reports.
async fn agent(what: &'static str, command: &Path, install: &str) -> Finding {
    let Some(path) = hark_core::platform::find_program(command) else {
        return Finding::not(
            Verdict::Note,
            what,
            format!("{} is not on PATH", command.display()),
            format!("to dispatch it: {install}"),
        );
    };
    let version = tokio::process::Command::new(&path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), version).await {
        Ok(Ok(out)) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout);
            let version =
                hark_core::text::visible(version.lines().next().unwrap_or_default().trim());
            Finding::ok(what, format!("{version} ({})", path.display()))
        }
        Ok(Ok(out)) => Finding::not(
            Verdict::Problem,
            what,
            format!("{} --version failed ({})", path.display(), out.status),
            format!("run `{} --version` to see why", path.display()),
        ),
        Ok(Err(e)) => Finding::not(
            Verdict::Problem,
            what,
            format!("{} cannot be started: {e}", path.display()),
            "reinstall it",
        ),
        Err(_) => Finding::not(
            Verdict::Problem,
            what,
            format!("{} --version did not answer within 10 s", path.display()),
            format!("run `{} --version` to see why", path.display()),
        ),
    }
}

/// The store: the daemon's word on its writes, and SQLite's on the file.
fn store(health: Option<StoreHealth>) -> Finding {
    let path = match &health {
        Some(health) => health.path.clone(),
        None => match Store::default_path() {
            Ok(path) => path,
            Err(e) => {
                return Finding::not(
                    Verdict::Problem,
                    "store",
                    e.to_string(),
                    "set HOME, or HARK_DATA_DIR to a directory",
                );
            }
        },
    };
    if let Some(error) = health.as_ref().and_then(|h| h.error.clone()) {
        return Finding::not(
            Verdict::Problem,
            "store",
            format!("{} refuses writes: {error}", path.display()),
            "free space on its disk; the daemon keeps what it cannot write in memory until then",
        );
    }
    match Store::check(&path) {
        Ok(None) => Finding::ok(
            "store",
            format!("none yet at {} (made when a daemon starts)", path.display()),
        ),
        Ok(Some(checked)) if checked.sound => Finding::ok(
            "store",
            format!(
                "{} is sound (schema {}{}, {} items)",
                path.display(),
                checked.schema,
                if checked.current {
                    ""
                } else {
                    "; this hark migrates it when it starts"
                },
                checked.items
            ),
        ),
        Ok(Some(checked)) => Finding::not(
            Verdict::Problem,
            "store",
            format!("{} is damaged: {}", path.display(), checked.verdict),
            "stop hark, move the file aside (its history goes with it), and start hark again",
        ),
        Err(e) => Finding::not(
            Verdict::Problem,
            "store",
            format!("{e}"),
            "stop hark, move the file aside (its history goes with it), and start hark again",
        ),
    }
}
