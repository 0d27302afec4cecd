//! Resuming a `--wrap` run: the user's own `claude -p PROMPT [flags]`, as
//! `claude -p [flags] --resume SESSION` with no prompt (what Claude Code
//! takes to carry out a deferred call; `docs/src/agents/claude-code.md`).
//!
//! The prompt is the command line's one positional word, so every flag
//! must be known, with whether it takes a value: a flag hark does not know
//! might take the next word, and guessing wrong would resume with a
//! prompt or drop a flag's value. Such a line is refused, and the run keeps
//! the bounded wait instead of parking.

use super::UserCommand;

/// Claude Code's `-p` flags that take no value.
const SWITCHES: &[&str] = &[
    "-p",
    "--print",
    "--verbose",
    "--include-partial-messages",
    "--replay-user-messages",
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
    "--strict-mcp-config",
    "--disable-slash-commands",
    "--no-session-persistence",
];

/// Its flags that take one value.
const VALUED: &[&str] = &[
    "--output-format",
    "--input-format",
    "--model",
    "--fallback-model",
    "--system-prompt",
    "--system-prompt-file",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--permission-mode",
    "--permission-prompt-tool",
    "--max-turns",
    "--max-budget-usd",
    "--agent",
    "--agents",
    "--setting-sources",
    "--json-schema",
    "--effort",
];

/// Its flags that take every word up to the next flag.
const VARIADIC: &[&str] = &["--add-dir", "--betas", "--plugin-dir"];

/// The flags naming which session to continue: a resumed run names its own.
const SESSION_SWITCHES: &[&str] = &["-c", "--continue", "--fork-session"];
const SESSION_VALUED: &[&str] = &["-r", "--resume", "--session-id"];

/// Why a wrapped command line cannot be resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotResumable {
    #[error("hark does not know whether {0} takes a value, so it cannot tell the prompt apart")]
    UnknownFlag(String),
    #[error("it has {0} words that are not flags; hark cannot tell which is the prompt")]
    Positionals(usize),
    #[error("it has no -p: only a print-mode agent can be paused and resumed")]
    NotPrint,
    #[error("it has no --output-format stream-json --verbose, so hark cannot see the agent pause")]
    NoStream,
}

impl UserCommand {
    /// Whether a run of this command line can park: hark sees the agent
    /// pause (its stream) and can resume it.
    pub fn parkable(&self) -> Result<(), NotResumable> {
        self.resumed("")?;
        let has = |flag: &str| self.rest.iter().any(|w| w == flag);
        let streams = self
            .rest
            .windows(2)
            .any(|w| w[0] == "--output-format" && w[1] == "stream-json")
            || has("--output-format=stream-json");
        if streams && has("--verbose") {
            Ok(())
        } else {
            Err(NotResumable::NoStream)
        }
    }

    /// This command line resuming `session`: its prompt and session flags
    /// dropped, `--resume SESSION` added.
    pub fn resumed(&self, session: &str) -> Result<UserCommand, NotResumable> {
        let mut rest = Vec::new();
        let mut positionals = 0;
        let mut print = false;
        let mut words = self.rest.iter().peekable();
        while let Some(word) = words.next() {
            let flag = word.split_once('=').map_or(word.as_str(), |(f, _)| f);
            let inline = flag.len() < word.len() && flag.starts_with("--");
            if SESSION_SWITCHES.contains(&flag) {
                continue;
            }
            if SESSION_VALUED.contains(&flag) {
                if !inline {
                    words.next();
                }
                continue;
            }
            if !word.starts_with('-') || word == "-" {
                positionals += 1;
                continue;
            }
            rest.push(word.clone());
            if SWITCHES.contains(&flag) {
                print |= flag == "-p" || flag == "--print";
            } else if inline {
                // `--flag=value` carries its value, whatever the flag.
            } else if VALUED.contains(&flag) {
                if let Some(value) = words.next() {
                    rest.push(value.clone());
                }
            } else if VARIADIC.contains(&flag) {
                while let Some(value) = words.next_if(|w| !w.starts_with('-')) {
                    rest.push(value.clone());
                }
            } else {
                return Err(NotResumable::UnknownFlag(flag.to_owned()));
            }
        }
        if !print {
            return Err(NotResumable::NotPrint);
        }
        if positionals > 1 {
            return Err(NotResumable::Positionals(positionals));
        }
        rest.push("--resume".to_owned());
        rest.push(session.to_owned());
        Ok(UserCommand {
            rest,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> UserCommand {
        let argv: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        UserCommand::parse(&argv).unwrap()
    }

    #[test]
    fn the_prompt_and_the_session_flags_go_and_the_rest_stays() {
        let user = line(&[
            "claude",
            "-p",
            "fix the bug",
            "--model",
            "opus",
            "--output-format=stream-json",
            "--verbose",
            "--resume",
            "old-session",
            "--add-dir",
            "../a",
            "../b",
            "--allowedTools",
            "Read",
        ]);
        let resumed = user.resumed("s-1").unwrap();
        assert_eq!(
            resumed.rest,
            [
                "-p",
                "--model",
                "opus",
                "--output-format=stream-json",
                "--verbose",
                "--add-dir",
                "../a",
                "../b",
                "--resume",
                "s-1"
            ]
        );
        // The list flags hark merges are kept apart, as they were.
        assert_eq!(resumed.allowed, ["Read"]);
    }

    #[test]
    fn a_line_hark_cannot_read_for_sure_is_refused() {
        assert_eq!(
            line(&["claude", "-p", "x", "--new-flag", "v"]).resumed("s"),
            Err(NotResumable::UnknownFlag("--new-flag".into()))
        );
        assert_eq!(
            line(&["claude", "-p", "a", "b"]).resumed("s"),
            Err(NotResumable::Positionals(2))
        );
        assert_eq!(
            line(&["claude", "do it"]).resumed("s"),
            Err(NotResumable::NotPrint)
        );
        assert_eq!(
            line(&["claude", "-p", "x", "--output-format", "json"]).parkable(),
            Err(NotResumable::NoStream)
        );
        let streams = [
            "claude",
            "-p",
            "x",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        assert_eq!(line(&streams).parkable(), Ok(()));
    }
}
