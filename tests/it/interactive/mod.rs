//! A Claude Code session someone started in a terminal: `hark hook
//! permission-request` (its `PermissionRequest` hook, put in its settings
//! by `hark hooks install`) files each permission dialog's call with the
//! operator, against a real `hark serve`, and prints the operator's verdict
//! as Claude Code reads it (the schema measured on Claude Code 2.1.332,
//! `docs/src/agents/claude-code-interactive.md`). The hook is fed what Claude
//! Code feeds it, on stdin, and ended as Claude Code ends it when the
//! terminal answers first.

use std::process::Child;

use crate::support::*;
use hark_harness::Sandbox;
use serde_json::{Value, json};

/// What Claude Code gives the hook when its dialog asks about `command`.
fn dialog(session: &str, command: &str) -> String {
    json!({
        "session_id": session,
        "transcript_path": format!("/home/u/.claude/projects/-work-api/{session}.jsonl"),
        "cwd": "/work/api",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tests"},
        "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
    })
    .to_string()
}

/// Runs the hook to its end on `input`; what it printed, parsed (`Null`
/// for nothing).
fn hook(sandbox: &Sandbox, input: &str) -> Value {
    let out = output_with_stdin(&mut sandbox.hark(["hook", "permission-request"]), input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = stdout(&out);
    match printed.trim() {
        "" => Value::Null,
        text => serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}")),
    }
}

/// Starts the hook on `input`, left running with its output piped.
fn spawn_hook(sandbox: &Sandbox, input: &str) -> Child {
    spawn_with_stdin(&mut sandbox.hark(["hook", "permission-request"]), input)
}

/// The item the hook filed for `session`, as the history shows it.
fn item_of(sandbox: &Sandbox, session: &str) -> Vec<Value> {
    inbox(sandbox)
        .into_iter()
        .filter(|i| i["session_id"] == session)
        .collect()
}

fn behavior(printed: &Value) -> (&str, &str) {
    let decision = &printed["hookSpecificOutput"]["decision"];
    assert_eq!(
        printed["hookSpecificOutput"]["hookEventName"],
        "PermissionRequest"
    );
    (
        decision["behavior"].as_str().unwrap_or_default(),
        decision["message"].as_str().unwrap_or_default(),
    )
}

/// The operator allows the dialog's command for the session: the hook
/// prints allow; the item is an approval of the interactive session, named
/// so; the next dialog of the same session for the same command is allowed
/// by the grant at once, with no new item, and another session's is asked.
#[test]
fn a_dialog_allowed_in_hark_is_allowed_and_its_session_grant_covers_the_next() {
    let daemon = serve(json!({"approval:Bash": "session"}));
    let sandbox = &daemon.sandbox;
    let printed = hook(sandbox, &dialog("s-term", "npm test"));
    assert_eq!(behavior(&printed), ("allow", ""));
    let items = item_of(sandbox, "s-term");
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_eq!(item["kind"], "approval", "{item}");
    assert_eq!(item["outcome"]["outcome"], "approved", "{item}");
    assert_eq!(item["outcome"]["scope"], "session", "{item}");
    let shown = item.to_string();
    assert!(shown.contains("claude (interactive)"), "{shown}");
    assert!(shown.contains("npm test"), "{shown}");

    let again = hook(sandbox, &dialog("s-term", "npm test"));
    assert_eq!(behavior(&again), ("allow", ""));
    assert_eq!(
        item_of(sandbox, "s-term").len(),
        1,
        "the grant asked nothing"
    );
    hook(sandbox, &dialog("s-other", "npm test"));
    assert_eq!(
        item_of(sandbox, "s-other").len(),
        1,
        "another session is asked"
    );
}

/// A read-only command the write-mode policy would pass unasked is still
/// put to the operator: Claude Code chose to ask.
#[test]
fn a_dialog_hark_would_pass_in_a_read_only_run_is_still_asked() {
    let daemon = serve(json!({"approval:Bash": "deny"}));
    let printed = hook(&daemon.sandbox, &dialog("s-ls", "ls"));
    let (decided, message) = behavior(&printed);
    assert_eq!(decided, "deny");
    assert!(message.contains("denied this from hark"), "{message}");
    let items = item_of(&daemon.sandbox, "s-ls");
    assert_eq!(items[0]["outcome"]["outcome"], "denied", "{items:?}");
}

/// The terminal answers first. Denied there, Claude Code ends the hook
/// (SIGTERM; or the pipe its decision would go to closed); allowed there,
/// it leaves the hook running, runs the call and fires `PostToolUse`, whose
/// hook (`hark hook post-tool-use`) tells the daemon. Either way the
/// dialog's hook prints nothing, the item settles as answered in the
/// terminal, and a late verdict from hark is refused.
#[test]
fn a_dialog_answered_in_the_terminal_first_withdraws_the_item() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    for (session, how) in [
        ("s-sig", "SIGTERM"),
        ("s-pipe", "closed stdout"),
        ("s-ran", "PostToolUse"),
    ] {
        let mut child = spawn_hook(sandbox, &dialog(session, "cargo publish"));
        let id = daemon.log.question_id(session);
        match how {
            "SIGTERM" => rustix::process::kill_process(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::TERM,
            )
            .unwrap(),
            "closed stdout" => drop(child.stdout.take()),
            _ => {
                // Another command of the session ran: nothing withdrawn.
                let other =
                    dialog(session, "cargo test").replace("PermissionRequest", "PostToolUse");
                let out = output_with_stdin(&mut sandbox.hark(["hook", "post-tool-use"]), &other);
                assert!(out.status.success() && stdout(&out).is_empty());
                let ran =
                    dialog(session, "cargo publish").replace("PermissionRequest", "PostToolUse");
                let out = output_with_stdin(&mut sandbox.hark(["hook", "post-tool-use"]), &ran);
                assert!(out.status.success() && stdout(&out).is_empty());
            }
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{how}: {out:?}");
        assert_eq!(stdout(&out).trim(), "", "{how}: the hook printed");
        let event = daemon
            .log
            .wait_event("operator.question.unanswered", &[("session_id", session)]);
        assert_eq!(event["outcome"], "cancelled", "{how}: {event}");
        let item = &item_of(sandbox, session)[0];
        assert!(
            item["outcome"]
                .to_string()
                .contains("answered in the agent's terminal"),
            "{how}: {item}"
        );
        let late = hark(sandbox, &["approve", &id]);
        assert!(!late.status.success(), "{how}: a late verdict was taken");
    }
}

/// What Claude Code gives the hook when its own question form shows.
fn question_form(session: &str) -> String {
    json!({
        "session_id": session,
        "cwd": "/work/api",
        "hook_event_name": "PermissionRequest",
        "tool_name": "AskUserQuestion",
        "tool_input": questions(&[db()]),
    })
    .to_string()
}

/// Claude Code's own question form is put to the operator as the question
/// it is: their pick comes back as the form's answers (`updatedInput`,
/// the questions kept); answered in the terminal first, `PostToolUse`
/// withdraws it.
#[test]
fn a_question_form_is_answered_from_hark_or_withdrawn_when_the_terminal_answers() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let printed = hook(&daemon.sandbox, &question_form("s-form"));
    assert_eq!(behavior(&printed), ("allow", ""));
    let updated = &printed["hookSpecificOutput"]["decision"]["updatedInput"];
    assert_eq!(updated["answers"], json!({"Which database?": "SQLite"}));
    assert_eq!(updated["questions"], questions(&[db()])["questions"]);
    let item = &item_of(&daemon.sandbox, "s-form")[0];
    assert_eq!(item["outcome"]["outcome"], "answered", "{item}");

    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let child = spawn_hook(sandbox, &question_form("s-typed"));
    daemon.log.question_id("s-typed");
    let ran = question_form("s-typed").replace("PermissionRequest", "PostToolUse");
    let out = output_with_stdin(&mut sandbox.hark(["hook", "post-tool-use"]), &ran);
    assert!(out.status.success());
    let event = daemon
        .log
        .wait_event("operator.question.unanswered", &[("session_id", "s-typed")]);
    assert_eq!(event["outcome"], "cancelled", "{event}");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && stdout(&out).trim().is_empty(),
        "{out:?}"
    );
}

/// With no daemon the hook prints nothing at once: the dialog is the
/// terminal's, exactly as without hark.
#[test]
fn with_no_daemon_the_hook_changes_nothing() {
    let sandbox = sandbox();
    let printed = hook(&sandbox, &dialog("s-alone", "rm -rf build"));
    assert_eq!(printed, Value::Null);
    // Input that is not Claude Code's: nothing either, and exit 0.
    assert_eq!(hook(&sandbox, "not json"), Value::Null);
}

/// `hark hooks install` adds the hook once, keeping the user's own hooks
/// and settings; `uninstall` leaves the file as it was before.
#[test]
fn hooks_install_keeps_the_users_own_and_uninstall_restores_them() {
    let sandbox = sandbox();
    let home = sandbox.path("home");
    let file = home.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let theirs = json!({
        "model": "opus",
        "hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "notify-send asked"}]}]},
    });
    std::fs::write(&file, theirs.to_string()).unwrap();
    let run = |args: &[&str]| {
        let out = sandbox.hark(args).env("HOME", &home).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap()
    };
    let installed = run(&["hooks", "install"]);
    let again = run(&["hooks", "install"]);
    assert_eq!(installed, again, "installing twice adds it once");
    let post = installed["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(post.ends_with("hook post-tool-use"), "{post}");
    let entries = installed["hooks"]["PermissionRequest"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{installed}");
    assert_eq!(entries[0], theirs["hooks"]["PermissionRequest"][0]);
    let command = entries[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(command.ends_with("hook permission-request"), "{command}");
    assert_eq!(installed["model"], "opus");
    assert_eq!(run(&["hooks", "uninstall"]), theirs);
    // Settings that are not JSON are left alone, with a clear error.
    std::fs::write(&file, "{ not json").unwrap();
    let out = sandbox
        .hark(["hooks", "install"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not JSON"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

mod codex;
mod real;
