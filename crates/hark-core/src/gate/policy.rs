//! The write-mode gate's policy (SPEC §5): [`Policy::classify`] sorts a
//! proposed tool call. Read-only steps pass without asking; writes ask;
//! external effects (a push, a PR) ask every time and never offer a lasting
//! grant. [`permission_result`] is the JSON text Claude Code expects back
//! from its `--permission-prompt-tool`.

use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Value, json};

use super::commands::{CommandRule, RuleError, normalized};
use super::shell::Script;
use crate::model::approval::Approval;
use crate::text::clip;

/// How a proposed tool call is treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Passes without asking.
    ReadOnly,
    /// Asks the operator (unless a grant covers it).
    Write(Approval),
}

/// Which tools and commands are read-only and which effects leave the
/// machine. The defaults are `defaults.toml`; the config adds to every list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Lists")]
pub struct Policy {
    /// Tools that never write (Claude Code's read tools by default).
    pub read_only_tools: Vec<String>,
    /// Bash commands that pass without asking: a command line passes when
    /// it parses, every simple command in it matches one of these rules,
    /// and nothing in it redirects, substitutes, expands or backgrounds.
    pub read_only_commands: Vec<CommandRule>,
    /// Words of a simple command with an external effect: asked every
    /// time, never granted for longer than the action.
    pub external_effects: Vec<String>,
}

/// The lists as written, in `defaults.toml` or a config's `[approvals]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Lists {
    read_only_tools: Vec<String>,
    read_only_commands: Vec<CommandRule>,
    external_effects: Vec<String>,
}

/// An `[approvals]` entry the gate refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("the read_only_tools entry {tool:?} is refused: that tool writes")]
    WritingTool { tool: String },
}

/// Tools the config may not call read-only.
const WRITING_TOOLS: &[&str] = &["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Shells that run a script given with `-c`; its effects are judged too.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh"];

/// How deep shells given scripts are followed looking for an effect.
const NESTING: usize = 3;

static DEFAULTS: LazyLock<Policy> = LazyLock::new(|| {
    let lists: Lists = toml::from_str(include_str!("defaults.toml")).expect("defaults.toml parses");
    let empty = Policy {
        read_only_tools: Vec::new(),
        read_only_commands: Vec::new(),
        external_effects: Vec::new(),
    };
    empty
        .extended(lists)
        .expect("defaults.toml holds valid entries")
});

impl Default for Policy {
    fn default() -> Self {
        DEFAULTS.clone()
    }
}

impl TryFrom<Lists> for Policy {
    type Error = PolicyError;

    /// The defaults with a config's entries added.
    fn try_from(lists: Lists) -> Result<Policy, PolicyError> {
        Policy::default().extended(lists)
    }
}

impl Policy {
    fn extended(mut self, lists: Lists) -> Result<Policy, PolicyError> {
        if let Some(tool) = lists
            .read_only_tools
            .iter()
            .find(|t| WRITING_TOOLS.contains(&t.as_str()))
        {
            return Err(PolicyError::WritingTool { tool: tool.clone() });
        }
        for rule in &lists.read_only_commands {
            rule.check()?;
        }
        self.read_only_tools.extend(lists.read_only_tools);
        self.read_only_commands.extend(lists.read_only_commands);
        self.external_effects.extend(lists.external_effects);
        Ok(self)
    }

    /// Sorts one proposed call (`tool_name` and `input` as Claude Code sends them).
    pub fn classify(&self, tool: &str, input: &Value) -> Class {
        if self.passes(tool, input) {
            Class::ReadOnly
        } else {
            Class::Write(self.describe(tool, input))
        }
    }

    /// Whether a call passes without asking: a read-only tool, or a Bash
    /// command line that is provably read-only.
    fn passes(&self, tool: &str, input: &Value) -> bool {
        if self.read_only_tools.iter().any(|t| t == tool) {
            return true;
        }
        if tool != "Bash" {
            return false;
        }
        let set = |name: &str| {
            input
                .get(name)
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
        };
        // A background process outlives the review; a command outside
        // Claude Code's sandbox has no second line of defence if the
        // classifier is wrong: both ask, whatever the command.
        let command = input
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        !set("run_in_background")
            && !set("dangerouslyDisableSandbox")
            && self.read_only_command(command)
    }

    /// The approval a call is put to the operator as: what it acts on, its
    /// preview (a diff for an edit), and whether its effect leaves the
    /// machine.
    pub fn describe(&self, tool: &str, input: &Value) -> Approval {
        let field = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or_default();
        let approval = |target: String, preview: String, external: bool| Approval {
            tool: tool.to_owned(),
            target,
            preview,
            external,
        };
        match tool {
            "Bash" => {
                let command = field("command");
                let unsandboxed = input
                    .get("dangerouslyDisableSandbox")
                    .is_some_and(|v| !v.is_null() && v != &Value::Bool(false));
                let external = self.external_command(command, 0);
                let preview = if unsandboxed {
                    format!("{command}\n\n(asks to run outside the sandbox)")
                } else {
                    command.to_owned()
                };
                approval(command.to_owned(), preview, external)
            }
            "Edit" => approval(
                field("file_path").to_owned(),
                diff(field("old_string"), field("new_string")),
                false,
            ),
            "MultiEdit" => {
                let edits = input.get("edits").and_then(Value::as_array);
                let preview = edits
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        let side = |n: &str| e.get(n).and_then(Value::as_str).unwrap_or_default();
                        diff(side("old_string"), side("new_string"))
                    })
                    .collect::<Vec<_>>()
                    .join("\n…\n");
                approval(field("file_path").to_owned(), preview, false)
            }
            "Write" => approval(
                field("file_path").to_owned(),
                diff("", field("content")),
                false,
            ),
            "NotebookEdit" => approval(
                field("notebook_path").to_owned(),
                diff("", field("new_source")),
                false,
            ),
            _ => {
                let preview = serde_json::to_string_pretty(input).unwrap_or_default();
                let target = ["url", "file_path", "path", "command", "name"]
                    .iter()
                    .map(|k| field(k))
                    .find(|v| !v.is_empty())
                    .unwrap_or(tool)
                    .to_owned();
                approval(target, preview, false)
            }
        }
    }

    /// Whether a Bash command line is provably read-only (see
    /// [`Script::simple_commands`]); `hark` itself never is.
    fn read_only_command(&self, command: &str) -> bool {
        let commands = Script::parse(command).and_then(|s| s.simple_commands());
        commands.is_some_and(|commands| {
            commands.iter().all(|words| {
                words.first().is_some_and(|name| name != "hark")
                    && self.read_only_commands.iter().any(|r| r.accepts(words))
            })
        })
    }

    /// Whether any simple command in the line, nested ones and the scripts
    /// of `bash -c`/`eval` included, has an external effect. A line that
    /// does not parse is judged by its words as written.
    fn external_command(&self, command: &str, depth: usize) -> bool {
        let Some(script) = Script::parse(command) else {
            let unquote = |w: &str| w.trim_matches(['\'', '"']).to_owned();
            let words: Vec<String> = command.split_whitespace().map(unquote).collect();
            return self.effect(&words);
        };
        script.all_commands().iter().any(|words| {
            self.effect(words) || depth < NESTING && self.nested_effect(words, depth + 1)
        })
    }

    fn nested_effect(&self, words: &[String], depth: usize) -> bool {
        let Some(name) = words.first() else {
            return false;
        };
        if name == "eval" {
            return self.external_command(&words[1..].join(" "), depth);
        }
        let script = words
            .iter()
            .position(|w| w == "-c")
            .and_then(|i| words.get(i + 1));
        SHELLS.contains(&name.as_str()) && script.is_some_and(|s| self.external_command(s, depth))
    }

    /// Whether one simple command's words hold an external effect pattern.
    fn effect(&self, words: &[String]) -> bool {
        let raw: Vec<&str> = words.iter().map(String::as_str).collect();
        let plain = normalized(words).unwrap_or_default();
        self.external_effects.iter().any(|pattern| {
            let pattern: Vec<&str> = pattern.split_whitespace().collect();
            holds(&raw, &pattern) || holds(&plain, &pattern)
        })
    }
}

/// Whether `words` hold `pattern`: its leading words in a row, then its
/// flags in a row after them (a flag matching any word it begins).
fn holds(words: &[&str], pattern: &[&str]) -> bool {
    let head = pattern.iter().take_while(|p| !p.starts_with('-')).count();
    let (head, flags) = pattern.split_at(head);
    if head.is_empty() {
        return false;
    }
    (0..words.len()).any(|at| {
        let rest = &words[at..];
        rest.starts_with(head)
            && (flags.is_empty()
                || rest[head.len()..]
                    .windows(flags.len())
                    .any(|w| w[0].starts_with(flags[0]) && w[1..] == flags[1..]))
    })
}

/// A line diff preview: removed lines with `-`, added ones with `+`.
pub fn diff(old: &str, new: &str) -> String {
    let mut out = String::new();
    for line in old.lines() {
        out.push_str("- ");
        out.push_str(line);
        out.push('\n');
    }
    for line in new.lines() {
        out.push_str("+ ");
        out.push_str(line);
        out.push('\n');
    }
    clip(&out, 20_000)
}

/// The text Claude Code expects from a permission prompt tool.
pub fn permission_result(allow: bool, input: &Value, message: &str) -> String {
    if allow {
        json!({"behavior": "allow", "updatedInput": input}).to_string()
    } else {
        json!({"behavior": "deny", "message": message}).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::approval::{Scope, Verdict};

    fn class(tool: &str, input: Value) -> Class {
        Policy::default().classify(tool, &input)
    }

    fn external(class: Class) -> bool {
        match class {
            Class::Write(a) => a.external,
            Class::ReadOnly => panic!("read-only"),
        }
    }

    #[test]
    fn read_tools_and_read_only_commands_pass() {
        assert_eq!(class("Read", json!({"file_path": "/x"})), Class::ReadOnly);
        assert_eq!(class("Grep", json!({"pattern": "x"})), Class::ReadOnly);
        for command in [
            "ls -la",
            "git status",
            "git log --oneline | head -5",
            "cat a && wc -l b",
            "find . -name '*.rs'",
        ] {
            assert_eq!(
                class("Bash", json!({"command": command})),
                Class::ReadOnly,
                "{command}"
            );
        }
    }

    #[test]
    fn writes_and_unsafe_commands_ask() {
        for command in [
            "rm -rf target",
            "echo hi > file",
            "ls; rm x",
            "cat $(rm x)",
            "find . -delete",
            "git commit -m x",
            "lsblk",
        ] {
            assert!(
                matches!(class("Bash", json!({"command": command})), Class::Write(_)),
                "{command}"
            );
        }
        let Class::Write(edit) = class(
            "Edit",
            json!({"file_path": "/src/a.rs", "old_string": "a", "new_string": "b"}),
        ) else {
            panic!("an edit asks")
        };
        assert_eq!(edit.target, "/src/a.rs");
        assert_eq!(edit.preview, "- a\n+ b\n");
        assert!(!edit.external);
        assert!(matches!(
            class("mcp__github__merge", json!({})),
            Class::Write(_)
        ));
    }

    #[test]
    fn external_effects_offer_only_the_action() {
        let push = class("Bash", json!({"command": "git push origin main"}));
        assert!(external(push.clone()));
        let Class::Write(push) = push else { panic!() };
        assert_eq!(push.offered(), &[Scope::Action]);
        let labels: Vec<String> = push.request().questions[0]
            .options
            .iter()
            .map(|o| o.label.clone())
            .collect();
        assert_eq!(
            labels,
            [
                Approval::label_of(Verdict::Allow(Scope::Action)),
                Approval::label_of(Verdict::Deny)
            ]
        );
        assert!(!external(class("Bash", json!({"command": "git pushd"}))));
    }
}
