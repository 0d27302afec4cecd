//! Where a child's stderr goes (a file in the sandbox, or a followed pipe),
//! and its last lines, shown under an error about that child.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use hark_harness::Lines;

/// How many of a child's last stderr lines an error shows.
const TAIL_LINES: usize = 10;

#[derive(Debug, thiserror::Error)]
#[error("cannot create {}", path.display())]
pub struct LogFileError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Creates (or truncates) the file a child's output goes to.
pub fn log_file(path: &Path) -> Result<File, LogFileError> {
    File::create(path).map_err(|source| LogFileError {
        path: path.to_owned(),
        source,
    })
}

/// The last lines of a child's stderr, for the report of an error about it.
/// Shown as an indented block after the error's first line (nothing when
/// the child wrote nothing).
#[derive(Debug, Clone, Default)]
pub struct Tail {
    /// Whose stderr, as the block's title says it: `its`, `hark serve's`.
    whose: &'static str,
    lines: Vec<String>,
}

impl Tail {
    /// The end of the stderr written to `log`.
    pub fn of_file(whose: &'static str, log: &Path) -> Tail {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut lines: Vec<String> = text
            .lines()
            .rev()
            .take(TAIL_LINES)
            .map(str::to_owned)
            .collect();
        lines.reverse();
        Tail { whose, lines }
    }

    /// The end of a followed stderr (the daemon's).
    pub fn of_lines(whose: &'static str, log: &Lines) -> Tail {
        let lines = log.since(log.len().saturating_sub(TAIL_LINES));
        Tail {
            whose,
            lines: lines.into_iter().map(|l| l.text).collect(),
        }
    }
}

impl fmt::Display for Tail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lines.is_empty() {
            return Ok(());
        }
        write!(
            f,
            "\n  {} stderr ended with:\n    {}",
            self.whose,
            self.lines.join("\n    ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_is_the_last_lines_indented_and_nothing_when_empty() {
        let sandbox = hark_harness::Sandbox::new("hark-bench-logs-", Path::new("/bin")).unwrap();
        let log = sandbox.path("child.stderr");
        let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).unwrap();
        let tail = Tail::of_file("its", &log).to_string();
        assert!(
            tail.starts_with("\n  its stderr ended with:\n    line 3\n"),
            "{tail}"
        );
        assert!(tail.ends_with("    line 12"), "{tail}");
        assert_eq!(
            Tail::of_file("its", &sandbox.path("absent")).to_string(),
            ""
        );
    }
}
