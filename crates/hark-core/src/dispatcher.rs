//! The daemon's side of dispatch: a `dispatch` frame on the app socket (or
//! the desktop's dispatch form) starts a `hark run` that the operator's
//! daemon owns. The run reports itself to the store like any `hark run`, its
//! questions reach this daemon's prompter, and its output goes to a log under
//! the data directory (`runs/<run id>.log`, 0600), so nothing it printed is
//! lost when no terminal is watching.
//!
//! The run is a child process of its own, not a task in the daemon: an agent
//! that hangs or floods its output cannot stall the operator's surfaces, and
//! the composition is the one `hark run` tests and documents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dispatch::Verb;
use crate::intake::Intake;
use crate::registry::Registry;
use crate::relay::RunDir;
use crate::store::RunStart;
use crate::text::tail;
use crate::wire::{ErrorCode, WireError};

/// The environment variable naming the run id a dispatched `hark run` takes.
pub const RUN_ID_ENV: &str = "HARK_RUN_ID";

/// One run to start, as a client or the dispatch form sends it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchRequest {
    /// What the agent is asked to do.
    pub prompt: String,
    /// task, ask, decide, or converse (each next message is asked for in the app).
    #[serde(default)]
    pub verb: Verb,
    /// The agent's working directory (absolute); the daemon's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string"))]
    pub cwd: Option<PathBuf>,
    /// The session its questions are filed under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub session: Option<String>,
    /// Seconds the operator has for each of its questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub timeout_secs: Option<f64>,
    /// Every write asks the operator first (`hark run --read-only`).
    #[serde(default)]
    pub read_only: bool,
    /// Authored questions asked before the agent starts (the JSON of
    /// `hark run --intake FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub intake: Option<Value>,
    /// The agent command; the config's, else `claude`, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string"))]
    pub agent: Option<PathBuf>,
    /// The whole environment the run gets (`hark run --detach` sends its
    /// caller's); the daemon's own, less what it set for itself, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub env: Option<Environment>,
}

/// A run's whole environment. It holds the caller's secrets (API keys), so
/// its `Debug` shows how many variables there are, never their values.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Environment(pub BTreeMap<String, String>);

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Environment({} variables)", self.0.len())
    }
}

/// A started run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatched {
    pub run_id: String,
    /// Where its output goes.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub log: PathBuf,
}

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
}

impl Dispatcher {
    /// The `hark` next to this executable (the desktop app is installed
    /// beside it), else `hark` on PATH.
    pub fn sibling_hark() -> PathBuf {
        std::env::current_exe()
            .ok()
            .map(|exe| exe.with_file_name("hark"))
            .filter(|hark| hark.is_file())
            .unwrap_or_else(|| PathBuf::from("hark"))
    }

    /// What a run this daemon started printed (its last 64 K characters).
    pub fn output(&self, run_id: &str) -> Result<String, WireError> {
        // An id, never a path: nothing outside the logs can be named.
        let id = uuid::Uuid::parse_str(run_id).map_err(|_| {
            WireError::new(ErrorCode::Invalid, format!("{run_id:?} is not a run id"))
        })?;
        match std::fs::read_to_string(self.logs.join(format!("{id}.log"))) {
            Ok(text) => Ok(tail(&text, OUTPUT_CHARS).to_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(WireError::new(
                ErrorCode::NotPending,
                format!(
                    "no output is kept for this run: hark keeps the output of the newest {} runs it started (the New run form, hark run --detach); a run started from a terminal printed there",
                    self.log_limit
                ),
            )),
            Err(e) => Err(WireError::new(
                ErrorCode::Unavailable,
                format!("cannot read the run's output: {e}"),
            )),
        }
    }

    /// Checks the request, starts its `hark run`, and watches it to the end
    /// (on the tokio runtime it is called from).
    pub fn start(&self, request: DispatchRequest) -> Result<Dispatched, WireError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(WireError::new(
                ErrorCode::Unavailable,
                "runs are started from within the daemon's runtime",
            ));
        }
        let invalid = |message: String| WireError::new(ErrorCode::Invalid, message);
        let prompt = request.prompt.trim();
        if prompt.is_empty() {
            return Err(invalid(
                "say what the agent should do: the prompt is empty".into(),
            ));
        }
        if let Some(cwd) = &request.cwd
            && !(cwd.is_absolute() && cwd.is_dir())
        {
            return Err(invalid(format!(
                "the working directory {} is not an existing absolute directory",
                cwd.display()
            )));
        }
        if let Some(secs) = request.timeout_secs
            && !(secs.is_finite() && secs > 0.0)
        {
            return Err(invalid(format!(
                "the timeout must be a positive number of seconds, not {secs}"
            )));
        }
        if let Some(intake) = &request.intake {
            Intake::from_value(intake.clone()).map_err(invalid)?;
        }
        let unavailable = |what: &str, e: &dyn std::fmt::Display| {
            WireError::new(ErrorCode::Unavailable, format!("{what}: {e}"))
        };
        self.prune_logs();
        let run_id = uuid::Uuid::new_v4().to_string();
        let dir =
            RunDir::create().map_err(|e| unavailable("cannot make the run's directory", &e))?;
        let log = create_log(&self.logs, &run_id)
            .map_err(|e| unavailable("cannot create the run's log", &e))?;

        let mut command = tokio::process::Command::new(&self.hark);
        command.args(["run", "--verb", request.verb.name()]);
        if let Some(cwd) = &request.cwd {
            command.arg("--cwd").arg(cwd);
        }
        if let Some(session) = request.session.as_deref().filter(|s| !s.trim().is_empty()) {
            command.args(["--session", session.trim()]);
        }
        if let Some(secs) = request.timeout_secs {
            command.arg("--timeout").arg(secs.to_string());
        }
        if request.read_only {
            command.arg("--read-only");
        }
        if let Some(agent) = &request.agent {
            command.arg("--agent").arg(agent);
        }
        if let Some(intake) = &request.intake {
            let json = serde_json::to_vec(intake).map_err(|e| unavailable("the intake", &e))?;
            let file = dir
                .write_private("intake.json", &json)
                .map_err(|e| unavailable("cannot write the intake", &e))?;
            command.arg("--intake").arg(file);
        }
        command.arg("--").arg(prompt);
        let stderr = log
            .try_clone()
            .map_err(|e| unavailable("cannot share the run's log", &e))?;
        match &request.env {
            Some(Environment(env)) => {
                command.env_clear().envs(env);
            }
            None => {
                for name in &self.own_env {
                    command.env_remove(name);
                }
            }
        }
        command
            .env("HARK_SOCKET", &self.socket)
            .env(RUN_ID_ENV, &run_id)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr);
        if let Some(cwd) = &request.cwd {
            command.current_dir(cwd);
        }
        let mut child = command
            .spawn()
            .map_err(|e| unavailable(&format!("cannot start {} run", self.hark.display()), &e))?;
        let log = self.logs.join(format!("{run_id}.log"));
        tracing::info!(run_id, log = %log.display(), pid = child.id(), "run dispatched");
        let pid = child.id().unwrap_or_default();
        // What the record says if the run dies before it reports itself.
        let fallback = RunStart {
            id: run_id.clone(),
            session_id: request.session.clone().unwrap_or_default(),
            command: format!("hark run -- {prompt}"),
            cwd: request.cwd.as_ref().map(|d| d.display().to_string()),
            pid,
        };
        let registry = self.registry.clone();
        let id = run_id.clone();
        let log_path = log.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            drop(dir);
            let code = status.as_ref().ok().and_then(|s| s.code()).unwrap_or(-1);
            tracing::info!(run_id = id, exit_code = code, "dispatched run ended");
            record_if_unreported(&registry, fallback, code, &log_path);
        });
        Ok(Dispatched { run_id, log })
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
            else {
                continue;
            };
            match store.run_is_past(id, self.log_limit) {
                Ok(true) => match std::fs::remove_file(&path) {
                    Ok(()) => tracing::debug!(run_id = id, "removed an old run's log"),
                    Err(e) => tracing::warn!(run_id = id, "cannot remove an old run's log: {e}"),
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
        Err(e) => tracing::warn!(run_id = run.id, "the failed run was not recorded: {e}"),
    }
}

/// Creates `<logs>/<run id>.log` (0600, in a 0700 directory).
fn create_log(logs: &Path, run_id: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    crate::socket::ensure_private_dir(logs).map_err(std::io::Error::other)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(logs.join(format!("{run_id}.log")))
}

#[cfg(test)]
mod tests {
    use super::Environment;

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
