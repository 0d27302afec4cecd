//! The daemon's side of dispatch: a `dispatch` frame on the app socket (or
//! the desktop's dispatch form) starts a `hark run` that the operator's
//! daemon owns. The run reports itself to the store like any `hark run`, its
//! questions reach this daemon's prompter, and its output goes to a log under
//! the data directory (`runs/<run id>.log`, 0600), so nothing it printed is
//! lost when no terminal is watching.
//!
//! The run is a child process of its own, not a task in the daemon: an agent
//! that hangs or floods its output cannot stall the operator's surfaces, and
//! the composition is the one `hark run` tests and documents. It is handed
//! the request's [`RunOptions`] whole, as one JSON argument (`hark run
//! --options-json`), not flag by flag: no option can be lost on the way.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::bridge::options::{IntakeSource, RunOptions};
use crate::bridge::wire::{DispatchRequest, Dispatched, Environment, ErrorCode, WireError};
use crate::daemon::peers::{Agents, Watch};
use crate::gate::intake::{Intake, IntakeError};
use crate::model::ids::{Ids, RunId, SessionId};
use crate::model::run::RunStart;
use crate::registry::Registry;
use crate::text::tail;

/// Starts runs for the daemon that owns `socket`.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    /// The `hark` executable the runs are.
    pub hark: PathBuf,
    /// The app socket the runs report to and ask through.
    pub socket: PathBuf,
    /// Where the run logs go (`<data dir>/runs`).
    pub logs: PathBuf,
    pub registry: Registry,
    /// Variables the daemon set in its own environment (the desktop app's
    /// rendering settings), taken out of a run that gets the daemon's
    /// environment: it gets the one the daemon was started with.
    pub own_env: Vec<&'static str>,
    /// How many runs keep their log (the newest; see [`Dispatcher::prune_logs`]).
    pub log_limit: u64,
    /// Where new runs' ids come from.
    pub ids: Ids,
    /// The agents the daemon watches: each run is one while it lives, so
    /// nothing it starts can act as the operator.
    pub agents: Agents,
}

impl Dispatcher {
    /// The `hark` next to this executable (the desktop app is installed
    /// beside it), else `hark` on PATH; the AppImage, when it runs from one
    /// (what the tray's Start at login writes must outlive the mount).
    pub fn sibling_hark() -> PathBuf {
        std::env::current_exe()
            .ok()
            .map(|exe| exe.with_file_name(format!("hark{}", std::env::consts::EXE_SUFFIX)))
            .filter(|hark| hark.is_file())
            .map(crate::platform::lasting_hark)
            .unwrap_or_else(|| PathBuf::from("hark"))
    }

    /// What a run this daemon started printed (its last 64 K characters).
    pub fn output(&self, run_id: &str) -> Result<String, DispatchError> {
        // An id, never a path: nothing outside the logs can be named.
        let id = uuid::Uuid::parse_str(run_id)
            .map_err(|_| DispatchError::NotARunId(run_id.to_owned()))?;
        match std::fs::read_to_string(self.logs.join(format!("{id}.log"))) {
            Ok(text) => Ok(tail(&text, OUTPUT_CHARS).to_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(DispatchError::NoOutput(self.log_limit))
            }
            Err(source) => Err(DispatchError::Io {
                what: "cannot read the run's output",
                source,
            }),
        }
    }

    /// Checks the request, starts its `hark run`, and watches it to the end
    /// (on the tokio runtime it is called from).
    pub fn start(&self, request: DispatchRequest) -> Result<Dispatched, DispatchError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(DispatchError::NoRuntime);
        }
        check(&request)?;
        self.prune_logs();
        let run_id = self.ids.run();
        let io =
            |what: &'static str| move |source: std::io::Error| DispatchError::Io { what, source };
        let log = create_log(&self.logs, &run_id).map_err(io("cannot create the run's log"))?;
        let stderr = log.try_clone().map_err(io("cannot share the run's log"))?;
        let mut command = self.command(&request)?;
        command
            .env(crate::env::RUN_ID, run_id.to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr);
        let child = command.spawn().map_err(io("cannot start the run"))?;
        let watched = self.agents.dispatched(child.id());
        let log = self.logs.join(format!("{run_id}.log"));
        tracing::info!(%run_id, log = %log.display(), pid = child.id(), "run dispatched");
        // What the record says if the run dies before it reports itself.
        let fallback = RunStart {
            id: run_id,
            session_id: SessionId::from(request.options.session.clone().unwrap_or_default()),
            command: format!("hark run -- {}", request.options.prompt().trim()),
            cwd: request
                .options
                .cwd
                .as_ref()
                .map(|d| d.display().to_string()),
            pid: child.id().unwrap_or_default(),
            confinement: None,
        };
        tokio::spawn(watch(
            child,
            watched,
            self.registry.clone(),
            fallback,
            log.clone(),
        ));
        Ok(Dispatched { run_id, log })
    }

    /// Resumes a paused run whose `hark run` is gone: `hark resume <id>` in
    /// the run's directory and environment, pointed at this daemon, output
    /// appended to the run's log, watched as an agent while it lives.
    /// Completes when it has ended.
    pub async fn resume(&self, run: &crate::store::paused::PausedRun) -> Result<(), DispatchError> {
        let io =
            |what: &'static str| move |source: std::io::Error| DispatchError::Io { what, source };
        let log = open_log(&self.logs, &run.run_id).map_err(io("cannot open the run's log"))?;
        let stderr = log.try_clone().map_err(io("cannot share the run's log"))?;
        let mut command = tokio::process::Command::from(run.resume_command(&self.hark));
        for name in &self.own_env {
            command.env_remove(name);
        }
        command
            .env(crate::env::SOCKET, &self.socket)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr);
        let mut child = command.spawn().map_err(io("cannot resume the run"))?;
        let watched = self.agents.dispatched(child.id());
        tracing::info!(run_id = %run.run_id, pid = child.id(), "paused run resumed by the daemon");
        let status = child.wait().await;
        drop(watched);
        let code = status.as_ref().ok().and_then(|s| s.code()).unwrap_or(-1);
        tracing::info!(run_id = %run.run_id, exit_code = code, "resumed run ended");
        Ok(())
    }

    /// The `hark run` for `request`: its options whole, as one JSON
    /// argument, in its directory and environment.
    fn command(&self, request: &DispatchRequest) -> Result<tokio::process::Command, DispatchError> {
        let DispatchRequest { options, env } = request;
        let mut options = options.clone();
        options.words = vec![options.prompt().trim().to_owned()];
        options.session = options
            .session
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        let json = serde_json::to_string(&options).map_err(|e| DispatchError::Io {
            what: "cannot write the run's options",
            source: std::io::Error::other(e),
        })?;
        let mut command = tokio::process::Command::new(&self.hark);
        command.args(["run", "--options-json", &json]);
        if let Some(cwd) = &options.cwd {
            command.current_dir(cwd);
        }
        match env {
            Some(Environment(env)) => {
                command.env_clear().envs(env);
            }
            None => {
                for name in &self.own_env {
                    command.env_remove(name);
                }
            }
        }
        command.env(crate::env::SOCKET, &self.socket);
        Ok(command)
    }

    /// Deletes the logs of ended runs older than the newest
    /// [`log_limit`](Dispatcher::log_limit) runs. A log whose run is running,
    /// or not recorded yet (just started), is kept.
    fn prune_logs(&self) {
        let Some(store) = self.registry.store() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&self.logs) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|n| n.parse::<RunId>().ok())
            else {
                continue;
            };
            match store.run_is_past(&id, self.log_limit) {
                Ok(true) => match std::fs::remove_file(&path) {
                    Ok(()) => tracing::debug!(run_id = %id, "removed an old run's log"),
                    Err(e) => tracing::warn!(run_id = %id, "cannot remove an old run's log: {e}"),
                },
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!("cannot trim the run logs: {e}");
                    return;
                }
            }
        }
    }
}

/// Refuses a request the daemon cannot start, with the reason. Every
/// option is named: a new one does not compile until it is checked here.
fn check(request: &DispatchRequest) -> Result<(), DispatchError> {
    let RunOptions {
        verb: _,
        cwd,
        session: _,
        timeout_secs,
        on_timeout: _,
        agent: _,
        agent_kind: _,
        wrap,
        read_only: _,
        no_confine: _,
        intake,
        answers: _,
        detach,
        hub,
        words: _,
    } = &request.options;
    if request.options.prompt().trim().is_empty() {
        return Err(DispatchError::EmptyPrompt);
    }
    if let Some(cwd) = cwd
        && !(cwd.is_absolute() && cwd.is_dir())
    {
        return Err(DispatchError::NotADirectory(cwd.clone()));
    }
    if let Some(secs) = *timeout_secs
        && !(secs.is_finite() && secs > 0.0)
    {
        return Err(DispatchError::Timeout(secs));
    }
    if *wrap {
        return Err(DispatchError::NotHere(
            "wrap: the daemon runs a prompt, not a command line",
        ));
    }
    if *detach {
        return Err(DispatchError::NotHere(
            "detach: the run is the daemon's already",
        ));
    }
    if hub.is_some() {
        return Err(DispatchError::NotHere(
            "hub: a dispatched run asks through this daemon",
        ));
    }
    match intake {
        Some(IntakeSource::Inline(intake)) => {
            Intake::from_value(intake.clone())?;
        }
        Some(IntakeSource::File(path)) if path.is_absolute() => {
            Intake::load(path)?;
        }
        Some(IntakeSource::File(path)) => {
            return Err(DispatchError::RelativeIntake(path.clone()));
        }
        None => {}
    }
    Ok(())
}

/// Waits for a dispatched run to end, then stops watching it (its pid is
/// free again once reaped), removes its directory, and records it if it
/// never reported itself.
async fn watch(
    mut child: tokio::process::Child,
    watched: Watch,
    registry: Registry,
    fallback: RunStart,
    log: PathBuf,
) {
    let status = child.wait().await;
    drop(watched);
    let code = status.as_ref().ok().and_then(|s| s.code()).unwrap_or(-1);
    tracing::info!(
        run_id = %fallback.id,
        exit_code = code,
        "dispatched run ended"
    );
    record_if_unreported(&registry, fallback, code, &log);
}

/// Why a run was not started, or its output cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("say what the agent should do: the prompt is empty")]
    EmptyPrompt,
    #[error("the working directory {} is not an existing absolute directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("the timeout must be a positive number of seconds, not {0}")]
    Timeout(f64),
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error("runs are started from within the daemon's runtime")]
    NoRuntime,
    #[error("{0:?} is not a run id")]
    NotARunId(String),
    #[error(
        "no output is kept for this run: hark keeps the output of the newest {0} runs it started (the New run form, hark run --detach); a run started from a terminal printed there"
    )]
    NoOutput(u64),
    #[error("the intake file {} is not an absolute path", .0.display())]
    RelativeIntake(PathBuf),
    #[error("a dispatched run cannot take {0}")]
    NotHere(&'static str),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
}

impl From<DispatchError> for WireError {
    fn from(e: DispatchError) -> WireError {
        let code = match &e {
            DispatchError::EmptyPrompt
            | DispatchError::NotADirectory(_)
            | DispatchError::Timeout(_)
            | DispatchError::Intake(_)
            | DispatchError::NotHere(_)
            | DispatchError::RelativeIntake(_)
            | DispatchError::NotARunId(_) => ErrorCode::Invalid,
            DispatchError::NoOutput(_) => ErrorCode::NotPending,
            DispatchError::NoRuntime | DispatchError::Io { .. } => ErrorCode::Unavailable,
        };
        WireError::new(code, e.to_string())
    }
}

/// How much of a run's log `Dispatcher::output` shows.
const OUTPUT_CHARS: usize = 64 * 1024;

/// How much of a run's log a failed run's record keeps.
const LOG_TAIL_CHARS: usize = 2000;

/// A run that ended before it reported itself (a refused intake, a bad
/// agent path) is recorded as failed, with the end of its log as the result,
/// so the operator sees why it never started.
fn record_if_unreported(registry: &Registry, run: RunStart, exit_code: i32, log: &Path) {
    let Some(store) = registry.store() else {
        return;
    };
    if store.has_run(&run.id).unwrap_or(true) {
        return;
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let code = if exit_code == 0 { 1 } else { exit_code };
    let recorded = store.run_started(&run).and_then(|()| {
        store.run_finished(
            &run.id,
            code,
            Some(tail(&text, LOG_TAIL_CHARS).trim()),
            None,
        )
    });
    match recorded {
        Ok(_) => registry.run_changed(),
        Err(e) => tracing::warn!(run_id = %run.id, "the failed run was not recorded: {e}"),
    }
}

/// Creates `<logs>/<run id>.log` (0600, in a 0700 directory).
fn create_log(logs: &Path, run_id: &RunId) -> std::io::Result<std::fs::File> {
    log_options(logs)?
        .create_new(true)
        .open(logs.join(format!("{run_id}.log")))
}

/// Opens `<logs>/<run id>.log` to append, creating it if missing.
fn open_log(logs: &Path, run_id: &RunId) -> std::io::Result<std::fs::File> {
    log_options(logs)?
        .create(true)
        .append(true)
        .open(logs.join(format!("{run_id}.log")))
}

/// How a run log is opened: written, 0600, in a 0700 `logs`.
fn log_options(logs: &Path) -> std::io::Result<std::fs::OpenOptions> {
    crate::files::ensure_private_dir(logs).map_err(std::io::Error::other)?;
    let mut options = std::fs::OpenOptions::new();
    crate::platform::private_file(options.write(true));
    Ok(options)
}

#[cfg(test)]
mod tests {
    use crate::bridge::wire::Environment;

    #[test]
    fn an_environment_never_shows_its_values() {
        let env = Environment([("API_KEY".to_owned(), "secret".to_owned())].into());
        assert_eq!(format!("{env:?}"), "Environment(1 variables)");
        assert_eq!(
            serde_json::to_string(&env).unwrap(),
            r#"{"API_KEY":"secret"}"#
        );
    }
}
