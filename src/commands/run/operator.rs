//! What a run asks the operator itself, through its own socket: the
//! intake before the agent starts, and a conversation's next message.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use hark_core::bridge::client::{self, Call, ClientError};
use hark_core::bridge::wire::{Caller, ClientFrame, ErrorCode, ServerFrame};
use hark_core::daemon::listener::MAX_TIMEOUT;
use hark_core::gate::intake::{Given, Intake};
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Asker, Outcome};
use hark_core::model::schema::AnswerValue;
use hark_core::text::clip;

use super::{RunError, Stop};

/// Asks the operator through the run's socket, waiting as long as hark
/// waits at most: the run does not go on without them.
async fn ask_operator(socket: &Path, asker: &str, request: Value) -> Result<Outcome, ClientError> {
    let frame = ClientFrame::Ask {
        caller: Caller {
            asker: Asker::this_process(asker),
            timeout_secs: Some(MAX_TIMEOUT.as_secs_f64()),
            ..Caller::default()
        },
        request,
    };
    Call::start(socket, &frame).await?.outcome().await
}

/// A conversation the daemon owns has no terminal: the operator's next
/// message is asked for in the app, after what the agent said.
const NEXT_MESSAGE: &str = "Your next message to the agent?";
const END_CONVERSATION: &str = "End the conversation";
const CARRY_ON: &str = "Carry on";

/// The question asking for the next message (the default ends it).
fn next_message_request(said: Option<&str>) -> Value {
    let said = said
        .map(|text| format!("The agent said: {}\n\n", clip(text, 600)))
        .unwrap_or_default();
    serde_json::json!({"questions": [{
        "question": format!("{said}{NEXT_MESSAGE}"),
        "header": "Converse",
        "multiSelect": false,
        "options": [
            {"label": END_CONVERSATION, "description": "Stop here; the run finishes."},
            {"label": CARRY_ON, "description": "Let the agent go on by its own judgement."}
        ],
        "default": END_CONVERSATION
    }]})
}

/// The operator's next message, or `None` to end the conversation (they
/// ended it, took the default, skipped, or nobody answered).
pub async fn next_message(socket: Option<&Path>, said: Option<&str>) -> Option<String> {
    let request = next_message_request(said);
    let outcome = ask_operator(socket?, "hark run (converse)", request).await;
    let Ok(Outcome::Answered(resolution)) = outcome else {
        return None;
    };
    let (question, answer) = resolution.answers.iter().next()?;
    if resolution.defaulted.contains(question) {
        return None;
    }
    match answer {
        AnswerValue::One(text) if text == END_CONVERSATION => None,
        AnswerValue::One(text) if text == CARRY_ON => Some("Go on.".into()),
        AnswerValue::One(text) if !text.trim().is_empty() => Some(text.trim().into()),
        _ => None,
    }
}

/// The longest a paused run waits to dial the daemon again when it heard
/// nothing change in the socket's directory (a daemon that answers but
/// refuses, a change the watch missed), or cannot watch it.
const REDIAL_AT_LATEST: Duration = Duration::from_secs(30);

/// Waits, however long it takes, for the operator to settle the item the
/// paused agent's tool use asked; through daemon restarts (the item waits
/// in the store): while the daemon is away it dials again when the socket's
/// directory changes (the daemon binding its socket anew), at the latest
/// every [`REDIAL_AT_LATEST`].
/// `None`: the daemon knows no item of that tool use (its store was
/// replaced); the resumed agent's hook then asks anew.
pub async fn await_parked(
    app_socket: &Path,
    tool_use_id: &str,
    session: &SessionId,
) -> Option<Outcome> {
    eprintln!(
        "hark: parked — the agent is paused until the operator answers (`hark inbox`); it resumes with the answer"
    );
    let frame = ClientFrame::Await {
        tool_use_id: tool_use_id.to_owned(),
        session_id: session.clone(),
    };
    // Set up at the first failure, before dialling again, so a socket bound
    // between the two is not missed.
    let mut watch: Option<SocketWatch> = None;
    loop {
        match client::request(app_socket, &frame).await {
            Ok(ServerFrame::Settled { outcome, .. }) => return Some(outcome),
            Ok(ServerFrame::Error(refusal)) if refusal.code == ErrorCode::NotFound => {
                eprintln!(
                    "hark: {}; resuming the agent, which asks again",
                    refusal.message
                );
                return None;
            }
            other => match &mut watch {
                None => {
                    eprintln!(
                        "hark: the operator's daemon is not answering ({other:?}); waiting for it"
                    );
                    watch = Some(SocketWatch::new(app_socket));
                }
                Some(watch) => watch.changed().await,
            },
        }
    }
}

/// How often a paused run dials the daemon when the socket's directory
/// cannot be watched (it is gone, or the system's watches are used up).
const REDIAL_UNWATCHED: Duration = Duration::from_secs(1);

/// Changes in the directory of the daemon's socket.
struct SocketWatch {
    /// Kept while watching; `None` when the directory cannot be watched.
    watcher: Option<notify::RecommendedWatcher>,
    changes: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl SocketWatch {
    fn new(socket: &Path) -> SocketWatch {
        use notify::Watcher;
        let (tx, changes) = tokio::sync::mpsc::unbounded_channel();
        let dir = socket.parent().unwrap_or(Path::new("/"));
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok() {
                let _ = tx.send(());
            }
        })
        .and_then(|mut w| {
            w.watch(dir, notify::RecursiveMode::NonRecursive)
                .map(|()| w)
        });
        if let Err(e) = &watcher {
            tracing::debug!("cannot watch {}: {e}; dialling every second", dir.display());
        }
        SocketWatch {
            watcher: watcher.ok(),
            changes,
        }
    }

    /// Completes at the next change, or after [`REDIAL_AT_LATEST`]; with
    /// no watch, after [`REDIAL_UNWATCHED`].
    async fn changed(&mut self) {
        if self.watcher.is_none() {
            tokio::time::sleep(REDIAL_UNWATCHED).await;
            return;
        }
        let _ = tokio::time::timeout(REDIAL_AT_LATEST, self.changes.recv()).await;
        // A restart is a burst of changes (the old socket removed, the new
        // one bound): one dial for all of them.
        while self.changes.try_recv().is_ok() {}
    }
}

/// The operator's next message on the terminal, or `None` at the end of input.
pub async fn next_message_from_terminal() -> Option<String> {
    eprint!("you> ");
    let mut line = String::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    match stdin.read_line(&mut line).await {
        Ok(0) | Err(_) => None,
        Ok(_) if line.trim().is_empty() => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks the intake questions not answered on the command line, through the
/// run's socket (`None`: nobody is attached). No timeout beyond hark's
/// longest wait: intake questions wait for the operator.
pub async fn ask_intake(
    intake: &Intake,
    given: &Given,
    socket: Option<&Path>,
) -> Result<Given, Stop> {
    let mut given = given.clone();
    for request in intake.requests(&given) {
        let missing = || {
            intake
                .questions
                .iter()
                .filter(|q| !given.contains_key(&q.id))
                .map(|q| q.id.clone())
                .collect::<Vec<_>>()
        };
        let Some(socket) = socket else {
            return Err(Stop::NotAnswered {
                reason: "no operator is attached".into(),
                missing: missing(),
            });
        };
        let request = serde_json::to_value(&request).map_err(RunError::Encode)?;
        match ask_operator(socket, "hark run (intake)", request).await {
            Ok(Outcome::Answered(resolution)) => {
                intake.take_answers(&resolution.answers, &mut given)
            }
            Ok(other) => {
                return Err(Stop::NotAnswered {
                    reason: other.name().replace('_', " "),
                    missing: missing(),
                });
            }
            Err(e) => {
                return Err(Stop::NotAnswered {
                    reason: e.to_string(),
                    missing: missing(),
                });
            }
        }
    }
    Ok(given)
}
