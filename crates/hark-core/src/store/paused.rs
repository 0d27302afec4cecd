//! Paused runs: what resuming a parked run needs once the `hark run` that
//! paused it is gone (a reboot, a kill, a closed terminal). One file per
//! run, `<data dir>/paused/<run id>.json`, written by the `hark run` whose
//! agent deferred a call and held locked by it while it lives: whoever can
//! take the lock (the daemon, when the item settles; `hark resume`) knows
//! its owner is gone and may resume the run itself.
//!
//! The file keeps the run's environment, because the resumed agent must
//! reach the same model API with the same credentials as the paused one (a
//! daemon's own environment, started at login, often has neither). It is
//! 0600 in a 0700 directory, like the store, and removed when the resumed
//! turn ends; while a run is paused its secrets are on disk, readable by
//! this user only.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::ids::{RunId, SessionId};

/// What resumes a paused run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedRun {
    pub run_id: RunId,
    /// The session its items are filed under.
    pub session: SessionId,
    /// The agent's own session id (`claude -p --resume <this>`).
    pub agent_session: String,
    /// The tool use that parked (its item is found by it).
    pub tool_use_id: String,
    /// The `hark run` arguments (after `run`), as they were given.
    pub args: Vec<String>,
    /// The directory `hark run` was started in.
    pub cwd: PathBuf,
    /// The whole environment of the `hark run` (only its UTF-8 variables).
    pub env: BTreeMap<String, String>,
}

impl PausedRun {
    /// The `hark resume <run id>` that takes the run over, in its directory
    /// and environment; `hark` is the executable to run.
    pub fn resume_command(&self, hark: &Path) -> std::process::Command {
        let mut command = std::process::Command::new(hark);
        command
            .arg("resume")
            .arg(self.run_id.to_string())
            .current_dir(&self.cwd)
            .env_clear()
            .envs(&self.env);
        command
    }
}

/// Why a paused run cannot be taken over.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    #[error("no run {0} is paused")]
    NotPaused(RunId),
    /// Its `hark run` (or another `hark resume`) still has it.
    #[error("run {0} is held by a hark process that still waits to resume it")]
    Held(RunId),
    #[error("the paused run {} cannot be read: {detail}", path.display())]
    Unreadable { path: PathBuf, detail: String },
    #[error(transparent)]
    Dir(#[from] crate::files::PrivateDirError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The directory of paused runs.
#[derive(Debug, Clone)]
pub struct Paused {
    dir: PathBuf,
}

/// A paused run's file, locked by this process while it lives. Dropped, it
/// is removed (the run went on); [`Held::keep`] leaves it for a later
/// resumer.
#[derive(Debug)]
pub struct Held {
    file: Option<File>,
    path: PathBuf,
}

impl Held {
    /// Leaves the file in place, to be taken over once this process is
    /// gone (its lock goes with it).
    pub fn keep(mut self) {
        self.file = None;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            // Removed while still locked, so no resumer can take a run
            // that has gone on.
            let _ = std::fs::remove_file(&self.path);
            drop(file);
        }
    }
}

impl Paused {
    /// The paused runs beside the store at `store_path`.
    pub fn beside(store_path: &Path) -> Paused {
        Paused {
            dir: store_path.with_file_name("paused"),
        }
    }

    /// The paused runs of this user (`HARK_DATA_DIR/paused`, else the data
    /// directory's).
    pub fn of_user() -> Result<Paused, crate::files::NoHomeError> {
        Ok(Paused::beside(&crate::store::Store::default_path()?))
    }

    fn path(&self, run_id: &RunId) -> PathBuf {
        self.dir.join(format!("{run_id}.json"))
    }

    /// Writes `run`'s file (0600) and holds it locked.
    pub fn hold(&self, run: &PausedRun) -> Result<Held, TakeError> {
        crate::files::ensure_private_dir(&self.dir)?;
        let path = self.path(&run.run_id);
        let io = |source| TakeError::Io {
            path: path.clone(),
            source,
        };
        let mut file = open_private(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(TakeError::Held(run.run_id)),
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let json = serde_json::to_vec(run).map_err(|e| io(std::io::Error::other(e)))?;
        file.set_len(0).map_err(io)?;
        file.write_all(&json).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(Held {
            file: Some(file),
            path,
        })
    }

    /// Takes over the paused run `run_id`, if nobody holds it.
    pub fn take(&self, run_id: &RunId) -> Result<(PausedRun, Held), TakeError> {
        let path = self.path(run_id);
        let io = |source| TakeError::Io {
            path: path.clone(),
            source,
        };
        let mut file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TakeError::NotPaused(*run_id));
            }
            Err(e) => return Err(io(e)),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(TakeError::Held(*run_id)),
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // Its owner may have removed it between our open and our lock.
        if unlinked(&file, &path) {
            return Err(TakeError::NotPaused(*run_id));
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        let held = Held {
            file: Some(file),
            path: path.clone(),
        };
        let run: PausedRun = serde_json::from_str(&text).map_err(|e| TakeError::Unreadable {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        if run.run_id != *run_id {
            return Err(TakeError::Unreadable {
                path,
                detail: format!("it names run {}", run.run_id),
            });
        }
        Ok((run, held))
    }

    /// Takes over `run_id` and lets it go at once: the run, when its owner
    /// is gone (for a resumer that hands it to a process of its own).
    pub fn peek(&self, run_id: &RunId) -> Result<PausedRun, TakeError> {
        let (run, held) = self.take(run_id)?;
        held.keep();
        Ok(run)
    }

    /// The runs paused here (whether held or not), by their file names.
    pub fn list(&self) -> Vec<RunId> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<RunId> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort();
        ids
    }

    /// Removes the file of a run that will never be resumed (its item is
    /// settled elsewhere, or its agent's session is gone); only when
    /// nobody holds it.
    pub fn forget(&self, run_id: &RunId) -> Result<(), TakeError> {
        let (_, held) = self.take(run_id).map_err(|e| match e {
            TakeError::Unreadable { path, .. } => {
                let _ = std::fs::remove_file(&path);
                TakeError::NotPaused(*run_id)
            }
            other => other,
        })?;
        drop(held);
        Ok(())
    }
}

/// Whether the open `file` is no longer the one at `path`.
fn unlinked(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = path;
        file.metadata().is_ok_and(|m| m.nlink() == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        !path.exists()
    }
}

/// Opens (creating 0600) a file only this user may read.
fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::Ids;

    fn run(id: RunId) -> PausedRun {
        PausedRun {
            run_id: id,
            session: "s1".into(),
            agent_session: "agent-1".into(),
            tool_use_id: "toolu_1".into(),
            args: vec!["--".into(), "do it".into()],
            cwd: "/tmp".into(),
            env: [("API_KEY".to_owned(), "secret".to_owned())].into(),
        }
    }

    #[test]
    fn a_held_run_cannot_be_taken_and_a_kept_one_can_once() {
        let dir = tempfile::tempdir().unwrap();
        let paused = Paused::beside(&dir.path().join("hark.db"));
        let id = Ids::random().run();
        let held = paused.hold(&run(id)).unwrap();
        assert!(matches!(paused.take(&id), Err(TakeError::Held(_))));
        assert_eq!(paused.list(), vec![id]);
        held.keep();
        let (taken, again) = paused.take(&id).unwrap();
        assert_eq!(taken, run(id));
        assert!(matches!(paused.take(&id), Err(TakeError::Held(_))));
        drop(again);
        assert!(matches!(paused.take(&id), Err(TakeError::NotPaused(_))));
        assert!(paused.list().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn only_its_user_can_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let paused = Paused::beside(&dir.path().join("hark.db"));
        let id = Ids::random().run();
        let held = paused.hold(&run(id)).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&paused.path(&id)), 0o600);
        assert_eq!(mode(&dir.path().join("paused")), 0o700);
        drop(held);
    }

    #[test]
    fn a_garbled_file_is_named_and_can_be_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let paused = Paused::beside(&dir.path().join("hark.db"));
        let id = Ids::random().run();
        paused.hold(&run(id)).unwrap().keep();
        std::fs::write(paused.path(&id), b"{not json").unwrap();
        assert!(matches!(
            paused.take(&id),
            Err(TakeError::Unreadable { .. })
        ));
        assert!(matches!(paused.forget(&id), Err(TakeError::NotPaused(_))));
        assert!(paused.list().is_empty());
    }
}
