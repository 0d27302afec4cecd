//! The real interactive Codex (0.171.0, `tests/agents`) in a terminal
//! (tmux), offline against the mock Responses API
//! (`bench/mock-openai`), with `hark hooks install --agent codex` in its
//! home and a real `hark serve`: the model runs one command that asks to
//! leave the sandbox, which raises Codex's approval prompt. Its
//! `SessionStart` hook starts `hark codex-bridge`, which carries the
//! prompt to the operator. Allowed from hark, the command runs; denied,
//! it does not and the model reads the rejection; answered in the
//! terminal first, hark's item settles as answered there and a late
//! verdict is refused. `HARK_TEST_CODEX` names another `codex`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::real::{PATIENCE, Tui};
use crate::support::*;
use hark_harness::Sandbox;
use serde_json::{Value, json};

/// Codex's home in the sandbox: a provider of its own (the mock) so it
/// shows no login, and the project trusted so it shows no folder screen
/// (measured: docs/src/agents/codex-interactive.md).
fn codex_home(sandbox: &Sandbox, project: &Path, mock: &MockApi) -> PathBuf {
    let home = sandbox.path("home/.codex");
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        r#"model = "gpt-mock"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
[tui]
screen_reader_detection_done = true
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
[projects."{project}"]
trust_level = "trusted"
"#,
        port = mock.port,
        project = project.display(),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    home
}

/// The Codex daemon and its updater outlive the terminal UI (measured):
/// stopped by their pid files when the case ends, which ends the bridge.
struct Daemons(PathBuf);

impl Drop for Daemons {
    fn drop(&mut self) {
        // The updater first: it starts the daemon again when it goes.
        for file in ["daemon-updater.pid", "daemon.pid"] {
            let pid = std::fs::read_to_string(self.0.join("app-server-daemon").join(file))
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .and_then(|v| v["pid"].as_u64());
            if let Some(pid) = pid {
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
                // Gone, or a zombie nobody reaps (an init that does not).
                let stat = PathBuf::from(format!("/proc/{pid}/stat"));
                until("the Codex daemon's end", PATIENCE, || {
                    std::fs::read_to_string(&stat)
                        .map_or(true, |s| s.contains(") Z "))
                        .then_some(())
                });
            }
        }
    }
}

/// What the calls' outputs sent back to the model said.
fn outputs(mock: &MockApi) -> Vec<String> {
    mock.bodies()
        .iter()
        .flat_map(|b| b["input"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].to_string())
        .collect()
}

const PROMPT: &str = "Would you like to run the following command?";

#[test]
fn the_real_codexs_prompts_are_answered_from_hark_or_its_terminal() {
    let Some(codex) = real_agent("codex", "HARK_TEST_CODEX") else {
        return;
    };
    for (case, script) in [
        ("allowed", json!({"approval:Bash": "action"})),
        ("denied", json!({"approval:Bash": "deny"})),
        ("terminal", json!({})),
    ] {
        let sandbox = crate::support::sandbox();
        let project = sandbox.path("api");
        std::fs::create_dir_all(&project).unwrap();
        let done = sandbox.path("ran");
        let call = json!({"name": "exec_command", "arguments": {
            "cmd": format!("touch {}", done.display()),
            "sandbox_permissions": "require_escalated",
            "justification": "make the marker outside the workspace"}});
        let mock = MockApi::start(
            "mock-openai/mock_responses.py",
            sandbox.root(),
            &["--call-json", &call.to_string(), "--final", "Done."],
        );
        let home = codex_home(&sandbox, &project, &mock);
        let installed = succeed(&sandbox, &["hooks", "install", "--agent", "codex"]);
        assert!(stdout(&installed).contains("hooks.json"), "{case}");
        let daemon = serve_in(&sandbox, script, &[]);
        let tui = Tui::spawn(&sandbox, &codex, &project, &[], &format!("codex-{case}"));
        let _daemons = Daemons(home.clone());
        // A new hook is trusted once, on Codex's own screen. Keys are sent
        // for what the screen shows, a second apart at most: a terminal UI
        // busy starting takes them late, and a flood lands elsewhere.
        let mut pressed = Instant::now() - Duration::from_secs(1);
        let mut press = |keys: &[&str]| {
            if pressed.elapsed() >= Duration::from_secs(1) {
                tui.keys(keys);
                pressed = Instant::now();
            }
        };
        tui.wait_for("the hooks' review", |p| {
            p.contains("Trust all and continue")
        });
        tui.until("its prompt, the hook trusted", || {
            let pane = tui.pane();
            if pane.contains("Trust all and continue") {
                press(&["2", "Enter"]);
            }
            pane.contains("Ask Codex to do anything").then_some(())
        });
        tui.until("the prompt sent to the model", || {
            if !mock.bodies().is_empty() {
                return Some(());
            }
            let pane = tui.pane();
            if pane.contains("› go") {
                // The first Enter may go to the paste the text looked like.
                press(&["Enter"]);
            } else if pane.contains("Ask Codex to do anything") {
                press(&["go"]);
            }
            None
        });
        let asked = daemon.log.wait_event("operator.question.asked", &[]);
        let id = asked["question_id"].as_str().unwrap().to_owned();
        let item = |sandbox: &Sandbox| {
            inbox(sandbox)
                .into_iter()
                .find(|i| i["id"] == id)
                .expect("the prompt's item")
        };
        match case {
            "allowed" => {
                until("the allowed command", PATIENCE, || {
                    done.exists().then_some(())
                });
                let pane = tui.wait_for("the turn's end", |p| p.contains("Done."));
                assert!(!pane.contains(PROMPT), "the prompt stayed:\n{pane}");
                let item = item(&sandbox);
                assert_eq!(item["outcome"]["outcome"], "approved", "{item}");
                let shown = item.to_string();
                assert!(shown.contains("codex (interactive)"), "{shown}");
                assert!(
                    shown.contains(&format!("touch {}", done.display())),
                    "{shown}"
                );
            }
            "denied" => {
                // Codex's title request gets the scripted call too, which
                // it refuses ("unsupported call"): the command's output is
                // the one that is not that.
                let said = tui.until("the command's output sent to the model", || {
                    outputs(&mock)
                        .into_iter()
                        .find(|o| !o.contains("unsupported call"))
                });
                assert!(said.contains("ejected"), "{said}");
                assert!(!done.exists(), "a denied command ran");
                assert_eq!(item(&sandbox)["outcome"]["outcome"], "denied");
            }
            _ => {
                tui.wait_for("the terminal's prompt", |p| p.contains(PROMPT));
                tui.keys(&["y"]);
                until("the command allowed in the terminal", PATIENCE, || {
                    done.exists().then_some(())
                });
                let event = daemon.log.wait_event("operator.question.unanswered", &[]);
                assert_eq!(event["outcome"], "cancelled", "{event}");
                let item = item(&sandbox);
                assert!(
                    item["outcome"]
                        .to_string()
                        .contains("answered in the agent's terminal"),
                    "{item}"
                );
                assert!(!hark(&sandbox, &["approve", &id]).status.success());
            }
        }
        drop(tui);
        drop(daemon);
    }
}
