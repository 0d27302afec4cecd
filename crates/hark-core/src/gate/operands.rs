//! What a read-only command's operands may be, when not any word: a
//! program the gate reads before it lets the command pass (a `sed` script
//! in [`sed`](super::sed), an `awk` program in [`awk`](super::awk)), a
//! `test` expression, `date`'s `+FORMAT`, `env`'s `NAME=VALUE`. Each check
//! fails closed: what it does not understand is not read-only.

use std::fmt;

use serde::Deserialize;

use super::commands::Arguments;
use super::{awk, sed};

/// How a rule reads its command's operands (`operands = "sed"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operands {
    /// Any words.
    #[default]
    Any,
    /// A `sed` script (the first operand, or every `-e` value) that
    /// neither writes a file nor runs a command.
    Sed,
    /// An `awk` program (the first operand) that neither writes, nor
    /// runs a command, nor reads one's output.
    Awk,
    /// A `test`/`[`/`[[` expression: its words are operators and literal
    /// operands, with no flags of the usual kind.
    Test,
    /// At most one word, starting with `+` (`date +%s`): any other operand
    /// of `date` sets the clock.
    Format,
    /// Only `NAME=VALUE` words (`env A=1`): the first other word is a
    /// command `env` would run.
    Assignments,
}

impl fmt::Display for Operands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operands::Any => "any",
            Operands::Sed => "sed",
            Operands::Awk => "awk",
            Operands::Test => "test",
            Operands::Format => "format",
            Operands::Assignments => "assignments",
        })
    }
}

/// Operators of `test`, `[` and `[[` that only compare or look.
const TEST_OPERATORS: &[&str] = &[
    "!", "(", ")", "-a", "-o", "&&", "||", "=", "==", "!=", "<", ">", "=~", "-nt", "-ot", "-ef",
    "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G",
    "-L", "-N", "-O", "-S", "-z", "-n",
];

/// Operators whose operands bash evaluates as arithmetic: inside `[[`
/// (and in some shells' `test`) `a[$(cmd)]` there runs `cmd`, so their
/// operands must be plain integers.
const ARITHMETIC: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

impl Operands {
    /// The program kind a command named `name` always has: a rule for
    /// `sed` or `awk` must say so, or it would pass their writes.
    pub fn of_program(name: &str) -> Option<Operands> {
        match name {
            "sed" | "gsed" => Some(Operands::Sed),
            "awk" | "gawk" | "mawk" | "nawk" => Some(Operands::Awk),
            _ => None,
        }
    }

    /// Whether the flags and operands read by the rule are read-only.
    pub fn accept(self, arguments: &Arguments) -> bool {
        let operands = &arguments.operands;
        match self {
            Operands::Any => true,
            // GNU sed and gawk read a flag after an operand as a flag, BSD
            // sed and awk as an operand (a script, a file): both readings
            // must agree on which word is the program.
            Operands::Sed if arguments.flag_after_operand => false,
            Operands::Sed => {
                let expressions: Vec<&str> = arguments
                    .flags
                    .iter()
                    .filter(|f| f.name == "-e" || f.name == "--expression")
                    .flat_map(|f| f.values.iter().copied())
                    .collect();
                // GNU and BSD sed join `-e` scripts with newlines.
                match (expressions.is_empty(), operands.first()) {
                    (false, _) => sed::read_only(&expressions.join("\n")),
                    (true, Some(script)) => sed::read_only(script),
                    (true, None) => false,
                }
            }
            Operands::Awk if arguments.flag_after_operand => false,
            // gawk opens `/inet/…` operands as network connections.
            Operands::Awk => operands.split_first().is_some_and(|(program, files)| {
                files.iter().all(|f| !f.starts_with("/inet")) && awk::read_only(program)
            }),
            Operands::Test => false,
            Operands::Format => operands.len() <= 1 && operands.iter().all(|o| o.starts_with('+')),
            Operands::Assignments => operands.iter().all(|o| {
                o.split_once('=').is_some_and(|(name, _)| {
                    let mut chars = name.chars();
                    chars
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            }),
        }
    }

    /// Whether `words`, the words after `test`, `[` or `[[`, are an
    /// expression that only compares and looks: known operators, literal
    /// operands, integers beside an arithmetic operator, no `-v` (bash
    /// evaluates `-v 'a[$(cmd)]'`'s subscript, running `cmd`), and the
    /// closing bracket last for `[` and `[[`.
    pub fn test(name: &str, words: &[&str]) -> bool {
        let words = match name {
            "[" => words.strip_suffix(&["]"]),
            "[[" => words.strip_suffix(&["]]"]),
            _ => Some(words),
        };
        let Some(words) = words else {
            return false;
        };
        let integer = |w: &str| {
            let digits = w.strip_prefix('-').unwrap_or(w);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        };
        words.iter().enumerate().all(|(at, &word)| {
            if ARITHMETIC.contains(&word) {
                let before = at.checked_sub(1).and_then(|i| words.get(i));
                let after = words.get(at + 1);
                return before.is_some_and(|w| integer(w)) && after.is_some_and(|w| integer(w));
            }
            if word.starts_with('-') && word.len() == 2 && !TEST_OPERATORS.contains(&word) {
                return integer(word);
            }
            !word.contains(['$', '`'])
        })
    }
}
