//! The real interactive Claude Code (2.1.332, `tests/agents`) in a
//! terminal (tmux), offline against the mock Messages API
//! (`bench/mock-anthropic`), with `hark hooks install` in its settings and
//! a real `hark serve`: the model runs one Bash command, which raises the
//! permission dialog. Allowed from hark, it runs and the dialog is gone;
//! denied from hark, it does not run and the model reads the denial;
//! answered in the terminal first, hark's item settles as answered there
//! and a late verdict is refused; with no daemon, the dialog is the
//! terminal's as without hark. And Claude Code's own question form,
//! answered from hark: the model reads the operator's pick. `HARK_TEST_CLAUDE` names another `claude`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::*;
use hark_harness::Sandbox;
use serde_json::{Value, json};

/// How long the TUI may take to start, think and run a step.
pub(super) const PATIENCE: Duration = Duration::from_secs(60);

/// The mock Messages API, scripted to run `command` once and then end the
/// turn.
struct Mock(MockApi);

impl Mock {
    fn start(dir: &Path, command: &str) -> Mock {
        let args = ["--bash", command, "--final", "done"];
        Mock(MockApi::start(
            "mock-anthropic/mock_anthropic.py",
            dir,
            &args,
        ))
    }

    /// Scripted to ask Claude Code's own question form instead.
    fn asking(dir: &Path) -> Mock {
        let call = json!({"name": "AskUserQuestion", "input": questions(&[db()])}).to_string();
        let args = ["--tool-json", &call, "--final", "done"];
        Mock(MockApi::start(
            "mock-anthropic/mock_anthropic.py",
            dir,
            &args,
        ))
    }

    /// The tool results Claude Code sent back to the model.
    fn tool_results(&self) -> Vec<Value> {
        self.0
            .bodies()
            .into_iter()
            .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["type"] == "tool_result")
            .collect()
    }
}

/// A terminal UI in a tmux server of its own; the server is killed when
/// dropped.
pub(super) struct Tui {
    socket: String,
}

impl Tui {
    /// Starts `program` in `project` under tmux, with `sandbox`'s
    /// environment and `env`.
    pub(super) fn spawn(
        sandbox: &Sandbox,
        program: &Path,
        project: &Path,
        env: &[(&str, String)],
        name: &str,
    ) -> Tui {
        let socket = format!("hark-{}-{name}", std::process::id());
        let mut command = sandbox.command("tmux");
        command
            .args(["-L", &socket, "new-session", "-d", "-x", "200", "-y", "50"])
            .arg("-c")
            .arg(project)
            .arg(program)
            .envs(env.iter().map(|(k, v)| (*k, v)));
        assert!(command.status().expect("tmux runs").success());
        Tui { socket }
    }

    /// Starts `claude` in `project`, its home `sandbox`'s, talking to
    /// `mock`; waits for its prompt and sends `go`.
    fn start(sandbox: &Sandbox, claude: &Path, project: &Path, mock: &Mock, name: &str) -> Tui {
        let env = [
            (
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", mock.0.port),
            ),
            ("ANTHROPIC_API_KEY", "x".to_owned()),
            ("DISABLE_TELEMETRY", "1".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("ENABLE_TOOL_SEARCH", "false".to_owned()),
        ];
        let tui = Tui::spawn(sandbox, claude, project, &env, name);
        tui.wait_for("its prompt", |pane| pane.contains("mode on"));
        tui.keys(&["go", "Enter"]);
        tui
    }

    pub(super) fn pane(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(super) fn wait_for(&self, what: &str, shown: impl Fn(&str) -> bool) -> String {
        self.until(what, || Some(self.pane()).filter(|p| shown(p)))
    }

    /// [`until`], showing the pane when it times out.
    pub(super) fn until<T>(&self, what: &str, probe: impl FnMut() -> Option<T>) -> T {
        until_showing(what, PATIENCE, probe, || {
            format!("; the terminal shows:\n{}", self.pane())
        })
    }

    /// Answers the dialog "1. Yes" in the terminal, once it shows, until
    /// its command has made `done` (the dialog takes no key in its first
    /// moments, against a keystroke meant for the prompt).
    fn allow_in_terminal(&self, done: &Path) {
        self.wait_for("the dialog", |p| p.contains(DIALOG));
        assert!(
            !done.exists(),
            "the command ran before the dialog was answered"
        );
        let mut pressed = Instant::now() - Duration::from_secs(1);
        self.until("the command allowed in the terminal", || {
            if pressed.elapsed() >= Duration::from_secs(1) && self.pane().contains(DIALOG) {
                self.keys(&["1"]);
                pressed = Instant::now();
            }
            done.exists().then_some(())
        });
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// A home where the TUI starts straight at its prompt (measured:
/// docs/src/agents/claude-code-interactive.md), with hark's hooks installed.
fn home(sandbox: &Sandbox, project: &Path) {
    let home = sandbox.path("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let state = json!({
        "hasCompletedOnboarding": true,
        "hasSeenAutoDefaultNudge": true,
        "customApiKeyResponses": {"approved": ["x"], "rejected": []},
        "projects": {project.display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(home.join(".claude.json"), state.to_string()).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        json!({"permissions": {"defaultMode": "default"}}).to_string(),
    )
    .unwrap();
    succeed(sandbox, &["hooks", "install"]);
}

const DIALOG: &str = "Do you want to proceed?";

#[test]
fn the_real_claude_codes_dialogs_are_answered_from_hark_or_its_terminal() {
    let Some(claude) = real_agent("claude", "HARK_TEST_CLAUDE") else {
        return;
    };
    for (case, script) in [
        ("allowed", json!({"approval:Bash": "action"})),
        ("denied", json!({"approval:Bash": "deny"})),
        ("terminal", json!({})),
        ("no daemon", Value::Null),
        ("question", json!({"Which database?": "SQLite"})),
    ] {
        let sandbox = crate::support::sandbox();
        let project = sandbox.path("api");
        std::fs::create_dir_all(&project).unwrap();
        home(&sandbox, &project);
        let done = sandbox.path("ran");
        let mock = match case {
            "question" => Mock::asking(sandbox.root()),
            _ => Mock::start(sandbox.root(), &format!("touch {}", done.display())),
        };
        let daemon = (!script.is_null()).then(|| serve_in(&sandbox, script, &[]));
        let tui = Tui::start(&sandbox, &claude, &project, &mock, case);
        match case {
            "allowed" => {
                until("the allowed command", PATIENCE, || {
                    done.exists().then_some(())
                });
                let pane = tui.wait_for("the turn's end", |p| p.contains("done"));
                assert!(!pane.contains(DIALOG), "{case}: the dialog stayed:\n{pane}");
                let item = &inbox(&sandbox)[0];
                assert_eq!(item["outcome"]["outcome"], "approved", "{item}");
                assert!(item.to_string().contains("claude (interactive)"), "{item}");
            }
            "denied" => {
                let results = until("the denial sent to the model", PATIENCE, || {
                    Some(mock.tool_results()).filter(|r| !r.is_empty())
                });
                assert!(
                    results[0].to_string().contains("denied this from hark"),
                    "{results:?}"
                );
                assert_eq!(results[0]["is_error"], true);
                assert!(!done.exists(), "a denied command ran");
            }
            "terminal" => {
                let daemon = daemon.as_ref().unwrap();
                let asked = daemon.log.wait_event("operator.question.asked", &[]);
                let id = asked["question_id"].as_str().unwrap().to_owned();
                tui.allow_in_terminal(&done);
                let event = daemon.log.wait_event("operator.question.unanswered", &[]);
                assert_eq!(event["outcome"], "cancelled", "{event}");
                let item = &inbox(&sandbox)[0];
                assert!(
                    item["outcome"]
                        .to_string()
                        .contains("answered in the agent's terminal"),
                    "{item}"
                );
                assert!(!hark(&sandbox, &["approve", &id]).status.success());
            }
            "question" => {
                let results = tui.until("the form's answer sent to the model", || {
                    Some(mock.tool_results()).filter(|r| !r.is_empty())
                });
                let read = results[0].to_string();
                assert!(read.contains(r#"\"Which database?\"=\"SQLite\""#), "{read}");
                let item = &inbox(&sandbox)[0];
                assert_eq!(item["outcome"]["outcome"], "answered", "{item}");
            }
            _ => {
                tui.allow_in_terminal(&done);
            }
        }
        drop(tui);
        drop(daemon);
    }
}
