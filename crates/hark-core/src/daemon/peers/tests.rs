//! The watch on agents, with real processes: a shell (the agent) and
//! what it starts.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use super::*;
use crate::bridge::wire::{Caller, WireReply};
use crate::model::ids::ItemId;
use crate::model::item::Asker;

/// A shell (the agent) and the `sleep` it started in the background.
fn agent_with_a_tool() -> (Child, u32) {
    let mut shell = Command::new("sh")
        .args(["-c", "sleep 30 & echo $!; wait"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(shell.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (shell, line.trim().parse().unwrap())
}

fn end(mut child: Child, tool: u32) {
    let _ = Command::new("kill").arg(tool.to_string()).status();
    let _ = child.kill();
    let _ = child.wait();
}

fn pid(child: &Child) -> Option<i32> {
    Some(child.id() as i32)
}

#[test]
fn a_run_and_what_it_starts_are_refused_until_it_ends_and_no_one_else_is() {
    let agents = Agents::default();
    let (shell, tool) = agent_with_a_tool();
    let mut outsider = Command::new("sleep").arg("30").spawn().unwrap();
    let watch = agents.dispatched(Some(shell.id()));
    let inside = Refusal::InsideAgent {
        pid: shell.id(),
        name: "sh".into(),
        why: Why::Run,
    };
    assert_eq!(agents.check(Some(tool as i32)), Err(inside.clone()));
    assert_eq!(agents.check(pid(&shell)), Err(inside));
    assert_eq!(agents.check(pid(&outsider)), Ok(()));
    // The daemon itself, an ancestor of the run, is not inside it.
    assert_eq!(agents.check(Some(std::process::id() as i32)), Ok(()));
    drop(watch);
    assert_eq!(agents.check(Some(tool as i32)), Ok(()));
    let _ = outsider.kill();
    let _ = outsider.wait();
    end(shell, tool);
}

#[test]
fn an_askers_parent_is_watched_only_when_the_asker_names_it() {
    let agents = Agents::default();
    let (shell, server) = agent_with_a_tool();
    let mut outsider = Command::new("sleep").arg("30").spawn().unwrap();
    // Naming some other process locks nobody out: only the peer is watched.
    let named_other = agents.asking(Some(server as i32), Some(outsider.id()));
    assert_eq!(agents.check(pid(&outsider)), Ok(()));
    assert_eq!(agents.check(pid(&shell)), Ok(()));
    assert!(agents.check(Some(server as i32)).is_err());
    drop(named_other);
    // Naming its parent (the agent that started its MCP server) watches it.
    let _asking = agents.asking(Some(server as i32), Some(shell.id()));
    assert!(matches!(
        agents.check(pid(&shell)),
        Err(Refusal::InsideAgent { pid, why: Why::Asking, .. }) if pid == shell.id()
    ));
    assert_eq!(agents.check(pid(&outsider)), Ok(()));
    let _ = outsider.kill();
    let _ = outsider.wait();
    end(shell, server);
}

#[test]
fn with_an_agent_watched_a_peer_of_unknown_ancestry_is_refused() {
    let agents = Agents::default();
    assert_eq!(agents.check(None), Ok(()));
    let (shell, tool) = agent_with_a_tool();
    let _watch = agents.dispatched(Some(shell.id()));
    assert!(matches!(agents.check(None), Err(Refusal::Unknown { .. })));
    // A pid no process holds.
    assert!(matches!(
        agents.check(Some(i32::MAX)),
        Err(Refusal::Unknown { .. })
    ));
    end(shell, tool);
}

#[test]
fn a_run_that_reported_its_start_is_watched_until_its_end_or_its_exit() {
    use crate::model::run::RunStart;
    let agents = Agents::default();
    let (shell, tool) = agent_with_a_tool();
    let run_id = RunId(uuid::Uuid::nil());
    let started = ClientFrame::RunStarted {
        run: RunStart {
            id: run_id,
            session_id: "s".into(),
            command: "hark run".into(),
            cwd: None,
            pid: shell.id(),
            confinement: None,
        },
    };
    // Reported by another process than the one it names: nobody is watched.
    agents.admit(Some(tool as i32), &started).unwrap();
    assert_eq!(agents.check(Some(tool as i32)), Ok(()));
    assert!(agents.admit(pid(&shell), &started).unwrap().is_none());
    assert!(agents.check(Some(tool as i32)).is_err());
    let finished = ClientFrame::RunFinished {
        run_id,
        exit_code: 0,
        result: None,
        cost_usd: None,
    };
    assert!(agents.admit(pid(&shell), &finished).unwrap().is_none());
    assert_eq!(agents.check(Some(tool as i32)), Ok(()));

    // One that never reports its end is watched until it is gone, and
    // forgotten when the next run starts.
    let mut run = Command::new("sleep").arg("30").spawn().unwrap();
    let ClientFrame::RunStarted { run: mut record } = started.clone() else {
        unreachable!()
    };
    record.pid = run.id();
    record.id = RunId(uuid::Uuid::from_u128(1));
    let lost = ClientFrame::RunStarted { run: record };
    agents.admit(pid(&run), &lost).unwrap();
    assert!(agents.check(pid(&run)).is_err());
    let _ = run.kill();
    let _ = run.wait();
    assert_eq!(agents.check(Some(tool as i32)), Ok(()));
    assert!(agents.admit(pid(&shell), &started).unwrap().is_none());
    let runs: Vec<RunId> = agents.lock().runs.keys().copied().collect();
    assert_eq!(runs, [run_id], "the lost run was forgotten");
    assert!(agents.check(Some(tool as i32)).is_err());
    end(shell, tool);
}

#[test]
fn every_operator_frame_is_checked_and_an_ask_is_watched_instead() {
    let agents = Agents::default();
    let (shell, tool) = agent_with_a_tool();
    let _watch = agents.dispatched(Some(shell.id()));
    let id = ItemId(uuid::Uuid::nil());
    let operator = [
        ClientFrame::Reply {
            id,
            reply: WireReply::Skip,
            via: None,
        },
        ClientFrame::List {
            filter: Default::default(),
        },
        ClientFrame::Get { id },
        ClientFrame::Status,
        ClientFrame::Subscribe,
        ClientFrame::ClearSettled,
        ClientFrame::Dispatch {
            request: Default::default(),
        },
        ClientFrame::ListRuns {
            limit: None,
            offset: None,
        },
        ClientFrame::ListSessions {
            limit: None,
            offset: None,
        },
    ];
    for frame in &operator {
        assert!(
            matches!(
                agents.admit(Some(tool as i32), frame),
                Err(Refusal::InsideAgent { .. })
            ),
            "{frame:?} was let through"
        );
    }
    let ask = ClientFrame::Ask {
        caller: Caller {
            asker: Asker::default(),
            ..Caller::default()
        },
        request: serde_json::json!({}),
    };
    let asking = agents.admit(Some(tool as i32), &ask).unwrap();
    assert!(asking.is_some_and(|w| w.keys.len() == 1));
    assert_eq!(
        agents
            .admit(Some(tool as i32), &ClientFrame::Cancel)
            .ok()
            .map(|w| w.is_none()),
        Some(true)
    );
    end(shell, tool);
}
