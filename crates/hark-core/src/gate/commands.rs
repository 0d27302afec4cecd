//! Which simple commands are read-only: a [`CommandRule`] names a command
//! (`sort`, `git log`) and the flags it may carry. The rules are an
//! allowlist: a flag no rule lists, a missing value, or one operand too
//! many, and the command is not read-only. The defaults are in
//! `defaults.toml`; the config adds more.

use serde::Deserialize;

/// One read-only command and what it may carry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    /// The command's words: `sort`, or `git log` (git's global options
    /// `-C DIR` and `--no-pager` may come between `git` and `log`).
    pub command: String,
    /// Flags that take no value: `-u`, `--unique`. Single-letter ones may
    /// be combined (`-la`), and a long one may be written `--color=never`.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Flags that take a value: `-k 2`, `-k2`, `--key 2`, `--key=2`.
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// The most operands (words that are not flags) it may have; no limit
    /// when left out. `uniq` has 1: its second operand is a file it writes.
    #[serde(default)]
    pub max_operands: Option<usize>,
    /// Whether `-NUM` (`head -20`, `git log -3`) is allowed.
    #[serde(default)]
    pub numeric_flag: bool,
    /// Whether single-letter flags may be combined into one word (`ls -la`).
    /// Off for commands whose flags are whole words with one dash (`find
    /// -name`): there `-ok` is not `-o -k`.
    #[serde(default = "yes")]
    pub combine: bool,
}

fn yes() -> bool {
    true
}

/// A rule the config may not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("the read_only_commands entry {command:?} names no command")]
    Empty { command: String },
    #[error(
        "the read_only_commands entry {command:?} is refused: hark itself never passes unasked \
         (a read-only agent could approve its own writes)"
    )]
    Hark { command: String },
    #[error(
        "the read_only_commands entry {command:?} is refused: a command is named by its bare \
         words, with no path, quote or expansion"
    )]
    NotBare { command: String },
    #[error("the read_only_commands entry {command:?} lists {flag:?}, which is not a flag")]
    NotAFlag { command: String, flag: String },
}

/// The global git options a read-only git command may carry: `-C DIR`
/// reads another repository; `--no-pager` turns the pager off. Any other
/// (`-c`, `--git-dir`, `--exec-path`, `--config-env`, …) asks.
fn git_globals(words: &[String]) -> Option<Vec<&str>> {
    let mut out = vec![words.first()?.as_str()];
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "-C" => {
                rest.next()?;
            }
            "--no-pager" => {}
            w if w.starts_with('-') => return None,
            w => {
                out.push(w);
                out.extend(rest.map(String::as_str));
                break;
            }
        }
    }
    Some(out)
}

/// `words` without git's global options, for matching rules and effects;
/// `None` when it carries one that is not known to be harmless.
pub fn normalized(words: &[String]) -> Option<Vec<&str>> {
    match words.first().map(String::as_str) {
        Some("git") => git_globals(words),
        Some(_) => Some(words.iter().map(String::as_str).collect()),
        None => None,
    }
}

impl CommandRule {
    /// Refuses a rule that could let something unsafe pass.
    pub fn check(&self) -> Result<(), RuleError> {
        let command = self.command.clone();
        let mut words = self.command.split_whitespace();
        match words.next() {
            None => return Err(RuleError::Empty { command }),
            Some("hark") => return Err(RuleError::Hark { command }),
            Some(_) => {}
        }
        let bare = |w: &str| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
        };
        if !self.command.split_whitespace().all(bare) {
            return Err(RuleError::NotBare { command });
        }
        let listed = self.flags.iter().chain(&self.value_flags);
        if let Some(flag) = listed
            .into_iter()
            .find(|f| !f.starts_with('-') || f.len() < 2)
        {
            let flag = flag.clone();
            return Err(RuleError::NotAFlag { command, flag });
        }
        Ok(())
    }

    /// Whether this rule lets the simple command `words` pass.
    pub fn accepts(&self, words: &[String]) -> bool {
        let Some(words) = normalized(words) else {
            return false;
        };
        let name: Vec<&str> = self.command.split_whitespace().collect();
        if name.is_empty() || !words.starts_with(&name) || name[0] == "hark" {
            return false;
        }
        self.arguments(&words[name.len()..])
    }

    fn arguments(&self, words: &[&str]) -> bool {
        let mut operands = 0;
        let mut words = words.iter();
        while let Some(&word) = words.next() {
            if word == "--" {
                operands += words.len();
                break;
            }
            if !word.starts_with('-') || word == "-" {
                operands += 1;
                continue;
            }
            match self.flag(word) {
                Flag::Alone => {}
                Flag::Valued => {
                    if words.next().is_none() {
                        return false;
                    }
                }
                Flag::Refused => return false,
            }
        }
        self.max_operands.is_none_or(|max| operands <= max)
    }

    /// How one word starting with `-` reads under this rule.
    fn flag(&self, word: &str) -> Flag {
        let listed = |list: &[String], flag: &str| list.iter().any(|f| f == flag);
        if listed(&self.flags, word) {
            return Flag::Alone;
        }
        if listed(&self.value_flags, word) {
            return Flag::Valued;
        }
        if let Some((name, _)) = word.split_once('=') {
            let known = listed(&self.flags, name) || listed(&self.value_flags, name);
            return if known && name.starts_with("--") {
                Flag::Alone
            } else {
                Flag::Refused
            };
        }
        let short = &word[1..];
        if word.starts_with("--") || short.is_empty() {
            return Flag::Refused;
        }
        if self.numeric_flag && short.bytes().all(|b| b.is_ascii_digit()) {
            return Flag::Alone;
        }
        if !self.combine && short.chars().count() > 1 {
            return self.attached(word);
        }
        // Combined single-letter flags: each one alone, except that one
        // taking a value ends the word (its value is the rest, or the next).
        for (at, letter) in short.char_indices() {
            let flag = format!("-{letter}");
            if listed(&self.flags, &flag) {
                continue;
            }
            if listed(&self.value_flags, &flag) {
                let attached = at + letter.len_utf8() < short.len();
                return if attached { Flag::Alone } else { Flag::Valued };
            }
            return Flag::Refused;
        }
        Flag::Alone
    }

    /// A single-letter flag with its value attached (`-L2`), for a rule
    /// whose flags do not combine.
    fn attached(&self, word: &str) -> Flag {
        let mut chars = word.char_indices().skip(1);
        let Some((at, letter)) = chars.next() else {
            return Flag::Refused;
        };
        let flag = &word[..at + letter.len_utf8()];
        if self.value_flags.iter().any(|f| f == flag) {
            Flag::Alone
        } else {
            Flag::Refused
        }
    }
}

/// How a flag word reads.
enum Flag {
    /// Complete in itself.
    Alone,
    /// Takes the next word as its value.
    Valued,
    /// Not allowed.
    Refused,
}
