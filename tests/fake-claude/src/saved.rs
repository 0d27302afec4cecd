//! A session as the fake saves it, to be resumed: its script, where it
//! stopped, the tool use it deferred. One JSON file a session,
//! `$HOME/.claude/projects/fake/<session_id>.json`, mode 0600.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use serde_json::{Value, json};

/// A tool use as the model made it.
#[derive(Debug, Clone)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
}

impl ToolUse {
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "input": self.input})
    }

    fn from_json(value: &Value) -> Option<Self> {
        Some(Self {
            id: value["id"].as_str()?.to_owned(),
            name: value["name"].as_str()?.to_owned(),
            input: value["input"].clone(),
        })
    }
}

/// What is kept of a session between runs.
#[derive(Debug, Clone, Default)]
pub struct Saved {
    /// The script of the latest prompt, one command a line.
    pub script: Vec<String>,
    /// The line to go on from when resumed.
    pub next: usize,
    /// The tool use the run stopped at, which a resume without a prompt
    /// carries out first.
    pub deferred: Option<ToolUse>,
    /// Tool uses so far in the session, for fresh ids.
    pub uses: u32,
}

/// Where session `id` is saved.
pub fn path(id: &str) -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home)
        .join(".claude/projects/fake")
        .join(format!("{id}.json"))
}

impl Saved {
    /// The saved session `id`, if there is one.
    pub fn load(id: &str) -> Option<Self> {
        let text = std::fs::read_to_string(path(id)).ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        Some(Self {
            script: value["script"]
                .as_array()?
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect(),
            next: value["next"].as_u64()? as usize,
            deferred: ToolUse::from_json(&value["deferred"]),
            uses: value["uses"].as_u64()? as u32,
        })
    }

    /// Writes the session's file, readable by its owner only.
    pub fn save(&self, id: &str) -> std::io::Result<()> {
        let path = path(id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let value = json!({
            "session_id": id,
            "script": self.script,
            "next": self.next,
            "deferred": self.deferred.as_ref().map(ToolUse::to_json),
            "uses": self.uses,
        });
        let mut options = std::fs::OpenOptions::new();
        options.create(true).write(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(path)?;
        writeln!(file, "{value}")
    }
}
