//! The write-mode gate (SPEC §5): an agent dispatched read-only asks before
//! each mutating step through `mcp__operator__approve`, Claude Code's
//! `--permission-prompt-tool`.
//!
//! - [`Policy::classify`] sorts a proposed tool call: read-only steps pass
//!   without asking; writes ask; external effects (a push, a PR) ask every
//!   time and never offer a lasting grant.
//! - A write is put to the operator as one question whose options are the
//!   grant scopes plus deny ([`Approval::request`]); the reply is a verdict,
//!   never answers (the registry refuses the mismatch).
//! - [`Grants`] remembers "turn" (the rest of this run) and "session" grants
//!   and is checked before asking again.
//! - [`permission_result`] is the JSON text Claude Code expects back.

use std::collections::HashSet;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::schema::{AnswerValue, AskRequest, Question, QuestionOption};
use crate::text::clip;

/// How far an approval reaches.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Writes are allowed for the rest of this run (the pre-picked default).
    Turn,
    /// Just this one call.
    Action,
    /// Writes are allowed for the rest of the session, across runs.
    Session,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Turn => "turn",
            Scope::Action => "action",
            Scope::Session => "session",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text.trim().to_ascii_lowercase().as_str() {
            "turn" => Some(Scope::Turn),
            "action" => Some(Scope::Action),
            "session" => Some(Scope::Session),
            _ => None,
        }
    }
}

/// The option labels of an approval question, by meaning.
const TURN: &str = "Allow for this run (Recommended)";
const ACTION: &str = "Allow this action only";
const SESSION: &str = "Allow for this session";
const DENY: &str = "Deny";

/// What the operator is asked to allow, as the modal and the inbox show it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The tool the agent wants to use (`Edit`, `Bash`, `mcp__github__create_pr`).
    pub tool: String,
    /// What it acts on: a file path, a command.
    pub target: String,
    /// A diff preview for edits, the full command for Bash, the input otherwise.
    pub preview: String,
    /// An external effect: only this action or deny, asked every time.
    pub external: bool,
}

impl Approval {
    /// The scopes this approval may be granted with.
    pub fn offered(&self) -> &'static [Scope] {
        if self.external {
            &[Scope::Action]
        } else {
            &[Scope::Turn, Scope::Action, Scope::Session]
        }
    }

    /// The scope an approval without one takes: turn, or the action alone
    /// for an external effect.
    pub fn default_scope(&self) -> Scope {
        if self.external {
            Scope::Action
        } else {
            Scope::Turn
        }
    }

    /// The one question put to the operator: "The agent wants to edit X /
    /// run Y. Allow this write action?"
    pub fn request(&self) -> AskRequest {
        let what = match self.tool.as_str() {
            "Bash" => format!("run `{}`", clip(&self.target, 200)),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => format!("edit {}", self.target),
            tool => format!("use {tool} on {}", clip(&self.target, 200)),
        };
        let kind = if self.external {
            "This has an effect outside this machine."
        } else {
            "Allow this write action?"
        };
        let option = |label: &str, description: &str| QuestionOption {
            label: label.to_owned(),
            description: description.to_owned(),
        };
        let mut options = Vec::new();
        if !self.external {
            options.push(option(TURN, "Allow writes for the rest of this run."));
        }
        options.push(option(
            ACTION,
            "Allow just this one call; ask again next time.",
        ));
        if !self.external {
            options.push(option(
                SESSION,
                "Allow writes for the rest of the session, across runs.",
            ));
        }
        options.push(option(DENY, "Keep the agent read-only."));
        AskRequest {
            questions: vec![Question {
                question: format!("The agent wants to {what}. {kind}"),
                header: "Approval".to_owned(),
                options,
                multi_select: false,
                default: self.external.then(|| AnswerValue::One(DENY.to_owned())),
            }],
        }
    }

    /// The option label of [`Approval::request`] for a verdict (`None`: deny).
    pub fn label_of(verdict: Option<Scope>) -> &'static str {
        match verdict {
            Some(Scope::Turn) => TURN,
            Some(Scope::Action) => ACTION,
            Some(Scope::Session) => SESSION,
            None => DENY,
        }
    }

    /// The verdict an option label of [`Approval::request`] stands for, for
    /// surfaces that show the question and return the picked label.
    pub fn verdict_of(label: &str) -> Option<Option<Scope>> {
        match label {
            TURN => Some(Some(Scope::Turn)),
            ACTION => Some(Some(Scope::Action)),
            SESSION => Some(Some(Scope::Session)),
            DENY => Some(None),
            _ => None,
        }
    }
}

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

/// Who decided a proposed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A read-only step: nobody needed to.
    Policy,
    /// A grant given earlier in this run or session.
    Grant,
    /// The operator, just now.
    Operator,
}

/// The grants given so far: by run ("turn") and by session.
#[derive(Debug, Default)]
pub struct Grants {
    inner: Mutex<GrantSets>,
}

#[derive(Debug, Default)]
struct GrantSets {
    runs: HashSet<String>,
    sessions: HashSet<String>,
}

impl Grants {
    fn sets(&self) -> std::sync::MutexGuard<'_, GrantSets> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The grant covering a write in `run` of `session`, if any. External
    /// effects are never covered.
    pub fn covering(&self, approval: &Approval, run: &str, session: &str) -> Option<Scope> {
        if approval.external {
            return None;
        }
        let sets = self.sets();
        if sets.sessions.contains(session) {
            Some(Scope::Session)
        } else if sets.runs.contains(run) {
            Some(Scope::Turn)
        } else {
            None
        }
    }

    /// Remembers a grant (an action grant is not remembered).
    pub fn grant(&self, scope: Scope, run: &str, session: &str) {
        let mut sets = self.sets();
        match scope {
            Scope::Turn => {
                sets.runs.insert(run.to_owned());
            }
            Scope::Session => {
                sets.sessions.insert(session.to_owned());
            }
            Scope::Action => {}
        }
    }
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
        assert_eq!(labels, [ACTION, DENY]);
        assert!(!external(class("Bash", json!({"command": "git pushd"}))));
    }

    #[test]
    fn grants_cover_their_scope_and_never_an_external_effect() {
        let grants = Grants::default();
        let Class::Write(edit) = class("Write", json!({"file_path": "a", "content": "x"})) else {
            panic!()
        };
        assert_eq!(grants.covering(&edit, "run-1", "s"), None);
        grants.grant(Scope::Action, "run-1", "s");
        assert_eq!(grants.covering(&edit, "run-1", "s"), None);
        grants.grant(Scope::Turn, "run-1", "s");
        assert_eq!(grants.covering(&edit, "run-1", "s"), Some(Scope::Turn));
        assert_eq!(grants.covering(&edit, "run-2", "s"), None);
        grants.grant(Scope::Session, "run-2", "s");
        assert_eq!(grants.covering(&edit, "run-3", "s"), Some(Scope::Session));
        let push = Approval {
            external: true,
            ..edit
        };
        assert_eq!(grants.covering(&push, "run-3", "s"), None);
    }

    #[test]
    fn the_question_maps_back_to_verdicts() {
        let Class::Write(edit) = class("Write", json!({"file_path": "a", "content": "x"})) else {
            panic!()
        };
        let request = edit.request();
        crate::validate::validate(
            &serde_json::to_value(&request).unwrap(),
            crate::validate::Rules::default(),
        )
        .expect("the approval question is a valid ask");
        let verdicts: Vec<Option<Option<Scope>>> = request.questions[0]
            .options
            .iter()
            .map(|o| Approval::verdict_of(&o.label))
            .collect();
        assert_eq!(
            verdicts,
            [
                Some(Some(Scope::Turn)),
                Some(Some(Scope::Action)),
                Some(Some(Scope::Session)),
                Some(None)
            ]
        );
    }
}
