//! The write-mode gate's policy (SPEC §5): [`Policy::classify`] sorts a
//! proposed tool call. Read-only steps pass without asking; writes ask;
//! external effects (a push, a PR) ask every time and never offer a lasting
//! grant. [`permission_result`] is the JSON text Claude Code expects back
//! from its `--permission-prompt-tool`.

use serde::Deserialize;
use serde_json::{Value, json};

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
/// machine. The config can extend every list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Tools that never write (Claude Code's read tools by default).
    pub read_only_tools: Vec<String>,
    /// Bash commands that pass without asking: a command passes when each
    /// part of it (split at `|`, `&&`, `||`, `;`) starts with one of these
    /// and it redirects nothing into a file.
    pub read_only_commands: Vec<String>,
    /// Bash command fragments with an external effect: asked every time,
    /// never granted for longer than the action.
    pub external_effects: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        let words = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        Policy {
            read_only_tools: words(&[
                "Read",
                "Glob",
                "Grep",
                "LS",
                "NotebookRead",
                "TodoWrite",
                "Task",
                "WebSearch",
                "BashOutput",
                "ExitPlanMode",
            ]),
            read_only_commands: words(&[
                "ls",
                "cat",
                "head",
                "tail",
                "wc",
                "grep",
                "rg",
                "find",
                "pwd",
                "echo",
                "file",
                "stat",
                "du",
                "df",
                "which",
                "tree",
                "sort",
                "uniq",
                "diff",
                "git status",
                "git diff",
                "git log",
                "git show",
                "git branch",
                "git rev-parse",
                "git blame",
                "cargo metadata",
                "cargo tree",
            ]),
            external_effects: words(&[
                "git push",
                "gh pr create",
                "gh pr merge",
                "gh release",
                "gh issue create",
                "gh api",
                "npm publish",
                "cargo publish",
                "docker push",
                "kubectl apply",
                "kubectl delete",
                "terraform apply",
                "curl -X POST",
                "curl -X PUT",
                "curl -X DELETE",
                "curl --data",
                "curl -d",
                "scp",
                "rsync",
                "ssh",
            ]),
        }
    }
}

/// `find` options that write or run something.
const FIND_WRITES: &[&str] = &["-delete", "-exec", "-execdir", "-ok", "-fprint"];

impl Policy {
    /// Sorts one proposed call (`tool_name` and `input` as Claude Code sends them).
    pub fn classify(&self, tool: &str, input: &Value) -> Class {
        if self.read_only_tools.iter().any(|t| t == tool) {
            return Class::ReadOnly;
        }
        let field = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or_default();
        let approval = |target: String, preview: String, external: bool| {
            Class::Write(Approval {
                tool: tool.to_owned(),
                target,
                preview,
                external,
            })
        };
        match tool {
            "Bash" => {
                let command = field("command");
                if self.read_only_command(command) {
                    return Class::ReadOnly;
                }
                let external = self.external_command(command);
                approval(command.to_owned(), command.to_owned(), external)
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

    fn read_only_command(&self, command: &str) -> bool {
        let command = command.trim();
        if command.is_empty()
            || command.contains('>')
            || command.contains('`')
            || command.contains("$(")
            || command.contains('\n')
        {
            return false;
        }
        command
            .split(['|', ';', '&'])
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .all(|part| {
                let words: Vec<&str> = part.split_whitespace().collect();
                let first_word_is_find = words.first() == Some(&"find");
                if first_word_is_find && words.iter().any(|w| FIND_WRITES.contains(w)) {
                    return false;
                }
                self.read_only_commands
                    .iter()
                    .any(|allowed| starts_with_words(&words, allowed))
            })
    }

    fn external_command(&self, command: &str) -> bool {
        let words: Vec<&str> = command.split_whitespace().collect();
        self.external_effects.iter().any(|pattern| {
            let pattern: Vec<&str> = pattern.split_whitespace().collect();
            !pattern.is_empty()
                && words
                    .windows(pattern.len())
                    .any(|w| w == pattern.as_slice())
        })
    }
}

/// Whether `words` begins with the words of `prefix`.
fn starts_with_words(words: &[&str], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split_whitespace().collect();
    !prefix.is_empty() && words.len() >= prefix.len() && words[..prefix.len()] == prefix[..]
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
