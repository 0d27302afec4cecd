//! One turn of Codex: its `codex exec --json` events shown as progress, and
//! its last message as the result, as `stream-json` is for Claude Code
//! ([`super::agent`]). The events, as
//! Codex 0.171.0 prints them: `thread.started {thread_id}`, `turn.started`,
//! `item.started` / `item.completed {item: {type, …}}` (`agent_message`,
//! `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`,
//! `web_search`, `error`), `turn.completed {usage}`, `turn.failed {error}`
//! and `error {message}`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use hark_core::agent::SERVER;

use super::agent::Turn;

/// After a turn: when Codex ended as it does outside a git repository
/// ("Not inside a trusted directory and --skip-git-repo-check was not
/// specified", exit status 1, before any event), says what that means and
/// what to do. hark never adds the flag itself: the check is Codex's guard
/// against working in the wrong directory, and lifting it is the user's
/// call.
pub fn explain_untrusted(args: &[String], cwd: &Path, turn: &Turn) {
    let Some(dir) = untrusted(args, cwd, turn) else {
        return;
    };
    eprintln!(
        "hark: Codex works only inside a git repository (its \"trusted directory\"), and {} is in none",
        dir.display()
    );
    eprintln!(
        "hint: run it in the project's repository (cd there, or --cwd DIR); to run Codex outside one, pass the flag yourself: hark run --wrap -- codex exec --skip-git-repo-check \"PROMPT\""
    );
}

/// The directory Codex refused, if the turn ended as that refusal does:
/// it failed before it started a thread, it was not given
/// `--skip-git-repo-check`, and the directory it checks (`-C DIR`, else the
/// one it ran in) is in no git repository.
fn untrusted(args: &[String], cwd: &Path, turn: &Turn) -> Option<PathBuf> {
    if turn.status == 0 || turn.session.is_some() {
        return None;
    }
    let mut dir = cwd.to_path_buf();
    // Its options; what follows `--` is the prompt.
    let mut words = args.iter().take_while(|a| *a != "--");
    while let Some(word) = words.next() {
        let named = match word.as_str() {
            "--skip-git-repo-check" => return None,
            "-C" | "--cd" => words.next().map(String::as_str),
            other => other
                .strip_prefix("--cd=")
                .or_else(|| other.strip_prefix("-C").filter(|d| !d.is_empty())),
        };
        if let Some(named) = named {
            dir = cwd.join(named);
        }
    }
    let in_repository = dir.ancestors().any(|d| d.join(".git").exists());
    (!in_repository).then_some(dir)
}

/// Shows one `--json` event: the turn's last message (its result) on
/// stdout once the turn completes, progress on stderr (raw lines pass
/// through to stdout).
pub fn show(line: &str, turn: &mut Turn) {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        turn.release();
        println!("{line}");
        return;
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    // A message is held until what follows it says whether it was the
    // last: anything shown after it makes it progress.
    let item = &event["item"];
    let after_it = match event["type"].as_str() {
        Some("item.started" | "item.completed") => {
            !matches!(item["type"].as_str(), Some("agent_message" | "reasoning"))
        }
        Some("turn.failed" | "error") => true,
        _ => false,
    };
    if after_it {
        turn.release();
    }
    match event["type"].as_str() {
        Some("thread.started") => turn.session = event["thread_id"].as_str().map(str::to_owned),
        Some("item.started") => started(item),
        Some("item.completed") => completed(item, turn),
        Some("turn.completed") => {
            turn.print_held();
            let usage = &event["usage"];
            let tokens = |k: &str| usage[k].as_u64().unwrap_or(0);
            eprintln!(
                "hark: the agent finished ({} tokens in, {} out)",
                tokens("input_tokens"),
                tokens("output_tokens")
            );
        }
        Some("turn.failed") => eprintln!(
            "hark: the agent failed: {}",
            text(&event["error"]["message"])
        ),
        Some("error") => eprintln!("  ! {}", text(&event["message"])),
        _ => {}
    }
}

/// A tool call as it starts: the operator's questions, or what it runs.
fn started(item: &Value) {
    match item["type"].as_str() {
        Some("mcp_tool_call") if item["server"] == SERVER && item["tool"] == "ask" => {
            for q in item["arguments"]["questions"]
                .as_array()
                .into_iter()
                .flatten()
            {
                eprintln!(
                    "  ? asks the operator: [{}] {}",
                    q["header"].as_str().unwrap_or_default(),
                    q["question"].as_str().unwrap_or_default()
                );
            }
        }
        Some("mcp_tool_call") => eprintln!(
            "  → {}.{}",
            item["server"].as_str().unwrap_or("a server"),
            item["tool"].as_str().unwrap_or("a tool")
        ),
        Some("command_execution") => {
            eprintln!("  → $ {}", item["command"].as_str().unwrap_or_default())
        }
        _ => {}
    }
}

/// An item as it ends: the agent's messages, edits, and what failed.
fn completed(item: &Value, turn: &mut Turn) {
    let failed = item["status"] == "failed" || item["status"] == "declined";
    match item["type"].as_str() {
        Some("agent_message") => {
            let message = item["text"].as_str().unwrap_or_default();
            turn.hold(message);
            turn.result = Some(message.to_owned());
        }
        Some("file_change") => {
            let paths: Vec<&str> = item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["path"].as_str())
                .collect();
            eprintln!(
                "  {} edits {}",
                if failed { "!" } else { "→" },
                paths.join(", ")
            );
        }
        Some("mcp_tool_call") if failed || !item["error"].is_null() => {
            let why = item["error"]["message"].as_str().unwrap_or("failed");
            eprintln!(
                "  ! {}.{}: {why}",
                item["server"].as_str().unwrap_or_default(),
                item["tool"].as_str().unwrap_or_default()
            );
        }
        Some("command_execution") if failed => eprintln!(
            "  ! $ {}: {}",
            item["command"].as_str().unwrap_or_default(),
            item["status"].as_str().unwrap_or_default()
        ),
        Some("error") => eprintln!("  ! {}", item["message"].as_str().unwrap_or_default()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_is_the_session_and_the_last_message_the_result() {
        let mut turn = Turn::default();
        for line in [
            r#"{"type":"thread.started","thread_id":"01a2-thread"}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Looking."}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Using SQLite."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":20,"output_tokens":10}}"#,
        ] {
            show(line, &mut turn);
        }
        assert_eq!(turn.session.as_deref(), Some("01a2-thread"));
        assert_eq!(turn.result.as_deref(), Some("Using SQLite."));
    }

    #[test]
    fn a_refusal_outside_git_is_told_by_the_flags_and_the_directory_checked() {
        let words = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let nowhere = Path::new("/nonexistent-hark-dir");
        let mut turn = Turn::default();
        turn.status = 1;
        let plain = words(&["exec", "--json", "--", "SAY --skip-git-repo-check"]);
        assert_eq!(untrusted(&plain, nowhere, &turn).as_deref(), Some(nowhere));
        for cd in [
            &["-C", "sub"][..],
            &["-Csub"],
            &["--cd=sub"],
            &["--cd", "sub"],
        ] {
            let args = words(&[&["exec"], cd, &["--json"]].concat());
            assert_eq!(
                untrusted(&args, nowhere, &turn),
                Some(nowhere.join("sub")),
                "{cd:?}"
            );
        }
        let skipped = words(&["exec", "--skip-git-repo-check", "--json"]);
        assert_eq!(untrusted(&skipped, nowhere, &turn), None);
        turn.session = Some("a-thread".to_owned());
        assert_eq!(untrusted(&plain, nowhere, &turn), None, "it had started");
        turn.session = None;
        turn.status = 0;
        assert_eq!(untrusted(&plain, nowhere, &turn), None, "it succeeded");
    }
}
