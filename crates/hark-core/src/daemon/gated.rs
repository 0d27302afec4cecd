//! The write-mode gate as the daemon serves it: an `approve` call is
//! classified by the policy, decided at once when it is read-only or a
//! grant covers it, and otherwise put to the operator as an approval item
//! (which parks like a question, for a run that can be resumed). Every
//! verdict is written to the audit trail.

use crate::bridge::deadline::SocketReader;
use crate::bridge::wire::{Caller, ServerFrame};
use crate::daemon::parked;
use crate::daemon::state::Daemon;
use crate::daemon::waiting::{ANSWERED_AT_AGENT, tell, wait_for_operator};
use crate::gate::policy::Class;
use crate::model::approval::DecidedBy;
use crate::model::item::Outcome;
use crate::platform::WriteHalf;
use crate::trace;

/// The write-mode gate: a read-only step or a call an earlier grant covers
/// is decided at once; anything else waits on the operator's verdict, which
/// is remembered for its scope.
pub(super) async fn approve(
    daemon: &Daemon,
    caller: Caller,
    tool_name: &str,
    input: &serde_json::Value,
    reader: SocketReader,
    mut writer: WriteHalf,
) {
    let session_id = caller.session();
    let class = if caller.dialog {
        Class::Write(daemon.gate.policy.describe(tool_name, input))
    } else {
        daemon.gate.policy.classify(tool_name, input)
    };
    let approval = match class {
        Class::ReadOnly => {
            let decided = ServerFrame::Decided {
                allow: true,
                scope: None,
                by: DecidedBy::Policy,
            };
            tell(&mut writer, &decided).await;
            return;
        }
        Class::Write(approval) => approval,
    };
    // "This run": the dispatched run, else the agent's session.
    let run = caller
        .run_id
        .map_or_else(|| session_id.to_string(), |id| id.to_string());
    let session = session_id.as_str();
    if let Some(scope) = daemon.gate.grants.covering(&approval, &run, session) {
        trace::write_mode(&approval, &run, session, Some(scope), "grant");
        let decided = ServerFrame::Decided {
            allow: true,
            scope: Some(scope),
            by: DecidedBy::Grant,
        };
        tell(&mut writer, &decided).await;
        return;
    }
    // The same tool use again (a paused read-only run resumed): the
    // approval it asked, not a new one.
    if let Some(found) = parked::find(daemon, &caller) {
        return parked::serve_again(found, daemon, &caller, reader, writer).await;
    }
    let item = daemon.new_item(caller, approval.request(), Some(approval.clone()));
    let id = item.id;
    let pending = daemon.registry.open(item);
    // The grant, and the audit line, come before the agent hears of the
    // verdict: its next call may come at once, and its audit line must
    // follow this one.
    let decided = |outcome: &Outcome| {
        let verdict = match outcome {
            Outcome::Approved { scope } => {
                daemon.gate.grants.grant(*scope, &run, session);
                Some(*scope)
            }
            _ => None,
        };
        let by = match outcome {
            Outcome::Approved { .. } | Outcome::Denied => "operator",
            other => other.name(),
        };
        trace::write_mode(&approval, &run, session, verdict, by);
    };
    let parked = || {
        daemon
            .registry
            .get(id)
            .is_some_and(|i| i.parked_at().is_some())
    };
    if wait_for_operator(pending, daemon, reader, writer, decided)
        .await
        .is_none()
        && !parked()
    {
        trace::write_mode(&approval, &run, session, None, "hang_up");
    }
}

/// A tool call the agent ran, its permission dialog answered in its
/// terminal: the dialog's item still pending here (of that session, for
/// that call, asked by the dialog's hook) is withdrawn as answered there.
/// For Claude Code's own question form, the item asking its questions.
pub(super) fn ran_at_agent(
    daemon: &Daemon,
    session: &crate::model::ids::SessionId,
    tool_name: &str,
    input: &serde_json::Value,
) -> ServerFrame {
    let question = tool_name == crate::agent::BUILTIN_ASK;
    let asked: Vec<&str> = input["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|q| q["question"].as_str())
        .collect();
    let ran = daemon.gate.policy.describe(tool_name, input);
    for item in daemon.registry.pending() {
        let dialog = item.asker.client.as_deref() == Some(crate::model::item::INTERACTIVE);
        let same = match &item.approval {
            Some(a) => !question && a.tool == ran.tool && a.target == ran.target,
            None => {
                question
                    && item
                        .request
                        .questions
                        .iter()
                        .map(|q| q.question.as_str())
                        .eq(asked.iter().copied())
            }
        };
        if dialog && same && &item.session_id == session {
            daemon.registry.cancel(item.id, ANSWERED_AT_AGENT);
        }
    }
    ServerFrame::Recorded
}
