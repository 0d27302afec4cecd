//! Which simple commands are read-only: a [`CommandRule`] names a command
//! (`sort`, `git log`) and the flags it may carry. The rules are an
//! allowlist: a flag no rule lists, a missing value, or one operand too
//! many, and the command is not read-only. Where the operands are a small
//! language (a `sed` script, an `awk` program, a `test` expression), the
//! rule says so and [`operands`](super::operands) reads them. The defaults
//! are in `defaults.toml`; the config adds more.

use serde::Deserialize;

use super::operands::Operands;

/// One read-only command and what it may carry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    /// The command's words: `sort`, or `git log` (git's global options
    /// `-C DIR` and `--no-pager` may come between `git` and `log`).
    pub command: String,
    /// Flags that take no value: `-u`, `--unique`. Single-letter ones may
    /// be combined (`-la`), and a long one may be written `--color=never`.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Flags that take a value: `-k 2`, `-k2`, `--key 2`, `--key=2`. A
    /// flag whose value is optional (git's `--abbrev[=N]`) belongs in
    /// `flags`, written `--abbrev=7`: as a value flag it would swallow the
    /// next word, which the program reads as a flag of its own.
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// Flags that take two values: jq's `--arg NAME VALUE`.
    #[serde(default)]
    pub pair_flags: Vec<String>,
    /// When not empty, one of these flags must be present: `git config`
    /// only reads with `--get`, `--list` and their kin.
    #[serde(default)]
    pub requires_one_of: Vec<String>,
    /// What the operands are: any words by default, or a program the
    /// gate reads (`sed`, `awk`), a `test` expression, `+FORMAT` words
    /// (`date`), `NAME=VALUE` words (`env`).
    #[serde(default)]
    pub operands: Operands,
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
    #[error(
        "the read_only_commands entry {command:?} is refused: its operands are a program that \
         can write; say operands = {operands:?} so that the gate reads it"
    )]
    Program { command: String, operands: String },
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
        let bracket = |w: &str| matches!(w, "[" | "[[");
        if !self
            .command
            .split_whitespace()
            .all(|w| bare(w) || bracket(w))
        {
            return Err(RuleError::NotBare { command });
        }
        let name = self.command.split_whitespace().next().unwrap_or_default();
        if let Some(language) = Operands::of_program(name)
            && self.operands != language
        {
            let operands = language.to_string();
            return Err(RuleError::Program { command, operands });
        }
        let listed = self
            .flags
            .iter()
            .chain(&self.value_flags)
            .chain(&self.pair_flags);
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
        let rest = &words[name.len()..];
        if self.operands == Operands::Test {
            return Operands::test(name[0], rest);
        }
        let Some(arguments) = self.arguments(rest) else {
            return false;
        };
        let required = self.requires_one_of.is_empty()
            || arguments
                .flags
                .iter()
                .any(|f| self.requires_one_of.contains(&f.name));
        required
            && self
                .max_operands
                .is_none_or(|max| arguments.operands.len() <= max)
            && self.operands.accept(&arguments)
    }

    /// The words after the command's name read as flags and operands;
    /// `None` when a flag is not allowed or lacks its value.
    fn arguments<'w>(&self, words: &[&'w str]) -> Option<Arguments<'w>> {
        let mut out = Arguments::default();
        let mut words = words.iter();
        while let Some(&word) = words.next() {
            if word == "--" {
                out.operands.extend(words.by_ref());
                break;
            }
            if !word.starts_with('-') || word == "-" {
                out.operands.push(word);
                continue;
            }
            out.flag_after_operand |= !out.operands.is_empty();
            let wanted = self.flag(word, &mut out.flags)?;
            for _ in 0..wanted {
                let value = words.next()?;
                out.flags.last_mut()?.values.push(value);
            }
        }
        Some(out)
    }

    /// Reads one word starting with `-` into `flags`; how many of the
    /// following words are its values, or `None` when it is not allowed.
    fn flag<'w>(&self, word: &'w str, flags: &mut Vec<FlagUse<'w>>) -> Option<usize> {
        let listed = |list: &[String], flag: &str| list.iter().any(|f| f == flag);
        let mut push = |name: &str, value: Option<&'w str>| {
            flags.push(FlagUse {
                name: name.to_owned(),
                values: value.into_iter().collect(),
            })
        };
        let arity = |flag: &str| {
            if listed(&self.flags, flag) {
                Some(0)
            } else if listed(&self.value_flags, flag) {
                Some(1)
            } else if listed(&self.pair_flags, flag) {
                Some(2)
            } else {
                None
            }
        };
        if let Some(wanted) = arity(word) {
            push(word, None);
            return Some(wanted);
        }
        if let Some((name, value)) = word.split_once('=') {
            // `--key=2` (a long flag only; `--arg=N V` is no form jq reads).
            let known = matches!(arity(name), Some(0 | 1)) && name.starts_with("--");
            return known.then(|| push(name, Some(value))).map(|()| 0);
        }
        let short = &word[1..];
        if word.starts_with("--") || short.is_empty() {
            return None;
        }
        if self.numeric_flag && short.bytes().all(|b| b.is_ascii_digit()) {
            push(word, None);
            return Some(0);
        }
        let letters = short.char_indices().map(|(at, letter)| {
            let rest = &short[at + letter.len_utf8()..];
            (format!("-{letter}"), rest)
        });
        if !self.combine && short.chars().count() > 1 {
            // Flags that do not combine (`find -name`): only a value
            // attached to a single letter (`-L2`) is read so.
            let (flag, rest) = letters.into_iter().next()?;
            return (arity(&flag) == Some(1))
                .then(|| push(&flag, Some(rest)))
                .map(|()| 0);
        }
        // Combined single-letter flags (`-la`), each one alone, except that
        // one taking a value ends the word: its value is the rest, or the
        // next word.
        for (flag, rest) in letters {
            match arity(&flag) {
                Some(0) => push(&flag, None),
                Some(1) if rest.is_empty() => {
                    push(&flag, None);
                    return Some(1);
                }
                Some(1) => {
                    push(&flag, Some(rest));
                    return Some(0);
                }
                _ => return None,
            }
        }
        Some(0)
    }
}

/// One flag as read: its name (`-e`, `--expression`) and its values.
#[derive(Debug)]
pub struct FlagUse<'w> {
    pub name: String,
    pub values: Vec<&'w str>,
}

/// A simple command's words after its name, as one rule reads them.
#[derive(Debug, Default)]
pub struct Arguments<'w> {
    pub flags: Vec<FlagUse<'w>>,
    pub operands: Vec<&'w str>,
    /// Whether a flag came after an operand: GNU tools read it as a flag,
    /// BSD ones as an operand.
    pub flag_after_operand: bool,
}
