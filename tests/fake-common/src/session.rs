//! Where a fake keeps the sessions (threads) it can be resumed in: one
//! JSON file a session, `DIR/<id>.json`.

use std::path::PathBuf;

use serde_json::Value;

/// `$VAR`, else `$HOME/under_home`: where a CLI keeps its data.
pub fn env_dir(var: &str, under_home: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(under_home)
    })
}

/// A resumed session with no file.
#[derive(Debug, thiserror::Error)]
#[error("no saved session {id}")]
pub struct Unknown {
    pub id: String,
}

/// The sessions kept in one directory.
#[derive(Debug, Clone)]
pub struct Sessions {
    dir: PathBuf,
}

impl Sessions {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Session `id`'s file.
    pub fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The session a run goes on in: the one it resumes, which must have
    /// been saved, else a fresh one.
    pub fn pick(
        &self,
        resume: Option<&String>,
        fresh: impl FnOnce() -> String,
    ) -> Result<String, Unknown> {
        match resume {
            Some(id) if !self.file(id).exists() => Err(Unknown { id: id.clone() }),
            Some(id) => Ok(id.clone()),
            None => Ok(fresh()),
        }
    }

    /// Saves session `id` as `value`; a file that cannot be written is
    /// passed over (the resume that needs it fails then, as it should).
    pub fn save(&self, id: &str, value: &Value) {
        let _ = std::fs::create_dir_all(&self.dir);
        let _ = std::fs::write(self.file(id), value.to_string());
    }
}
