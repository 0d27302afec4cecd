//! The log a fake keeps when the tests ask for it: one JSON line an event
//! (its invocation, a server started, a tool result), appended to the file
//! its `FAKE_*_LOG` variable names.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{Value, json};

/// A fake's log, named by the environment variable `var`; without it,
/// nothing is written.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    var: &'static str,
}

impl Log {
    pub const fn new(var: &'static str) -> Self {
        Self { var }
    }

    /// The variable that names the file (`FAKE_CLAUDE_LOG`).
    pub fn var(&self) -> &'static str {
        self.var
    }

    /// Appends `line` (one line of JSON); a log that cannot be written is
    /// passed over, as the run must not depend on it.
    pub fn line(&self, line: &Value) {
        let Some(path) = std::env::var_os(self.var) else {
            return;
        };
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }

    /// A tool call's outcome, `{"tool_result": TEXT, "is_error": BOOL}`.
    pub fn tool_result(&self, outcome: &Result<String, String>) {
        self.line(&match outcome {
            Ok(text) => json!({"tool_result": text, "is_error": false}),
            Err(text) => json!({"tool_result": text, "is_error": true}),
        });
    }
}

/// The variables of an environment that a log keeps: hark's (`HARK_*`),
/// the tests' `FAKE_MARKER`, and those `also` names.
pub fn hark_env<'a>(
    vars: impl IntoIterator<Item = (&'a String, &'a String)>,
    also: impl Fn(&str) -> bool,
) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(k, _)| k.starts_with("HARK_") || *k == "FAKE_MARKER" || also(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// [`hark_env`] of this process's own environment.
pub fn own_hark_env(also: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    hark_env(&std::env::vars().collect::<BTreeMap<_, _>>(), also)
}

/// The working directory as the logs record it (`""` if unknown).
pub fn cwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}
