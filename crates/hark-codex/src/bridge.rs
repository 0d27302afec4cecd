//! The bridge's one loop: resume each thread the moment it waits on an
//! approval (the pending prompt is replayed to a client that resumes,
//! later ones come live), file each prompt with the operator, and answer
//! it with their verdict — unless the terminal answered first, which the
//! server announces as `serverRequest/resolved` and which withdraws the
//! item as answered there.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use hark_core::bridge::client::{Call, Started};
use hark_core::bridge::wire::{Caller, ClientFrame};
use hark_core::model::item::{Asker, Outcome};
use hark_core::registry::Waited;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::app_server::{AppServer, Incoming};
use crate::prompt::{Known, Prompt};
use crate::{CLIENT, CodexError, Operator};

/// What the thread events told, shared with the prompts' tasks.
#[derive(Debug, Default)]
struct Threads {
    cwd: HashMap<String, Option<String>>,
    changes: HashMap<String, Value>,
}

impl Known for Mutex<Threads> {
    fn cwd(&self, thread: &str) -> Option<String> {
        self.lock()
            .expect("threads")
            .cwd
            .get(thread)
            .cloned()
            .flatten()
    }
    fn changes(&self, item: &str) -> Option<Value> {
        self.lock().expect("threads").changes.get(item).cloned()
    }
}

/// [`crate::run`].
pub async fn run(socket: &Path, operator: Operator) -> Result<(), CodexError> {
    let (server, mut incoming) = AppServer::connect(socket).await?;
    server
        .request(
            "initialize",
            json!({
                "clientInfo": {"name": "hark", "title": "hark", "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"experimentalApi": true},
            }),
        )
        .await?;
    server.notify("initialized")?;
    let threads = Arc::new(Mutex::new(Threads::default()));
    let mut resumed = HashSet::new();
    // Prompts filed with the operator, by the server's request id: the
    // terminal's answer ends them.
    let mut open: HashMap<String, oneshot::Sender<()>> = HashMap::new();
    let loaded = server.request("thread/loaded/list", json!({})).await?;
    for thread in loaded["data"].as_array().into_iter().flatten() {
        if let Some(thread) = thread.as_str() {
            resume(&server, &threads, &mut resumed, thread);
        }
    }
    while let Some(message) = incoming.recv().await {
        match message {
            Incoming::Request { id, method, params } => {
                let Some(prompt) = Prompt::read(&method, &params, &*threads) else {
                    continue;
                };
                let (answered_here, heard) = oneshot::channel();
                open.insert(id.to_string(), answered_here);
                tokio::spawn(ask(server.clone(), operator.clone(), id, prompt, heard));
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "thread/status/changed"
                    if params["status"]["activeFlags"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|f| f == "waitingOnApproval")) =>
                {
                    if let Some(thread) = params["threadId"].as_str() {
                        resume(&server, &threads, &mut resumed, thread);
                    }
                }
                "serverRequest/resolved" => {
                    if let Some(answered) = open.remove(&params["requestId"].to_string()) {
                        let _ = answered.send(());
                    }
                }
                "item/started" if params["item"]["type"] == "fileChange" => {
                    if let Some(id) = params["item"]["id"].as_str() {
                        let changes = params["item"]["changes"].clone();
                        threads
                            .lock()
                            .expect("threads")
                            .changes
                            .insert(id.to_owned(), changes);
                    }
                }
                "item/completed" => {
                    if let Some(id) = params["item"]["id"].as_str() {
                        threads.lock().expect("threads").changes.remove(id);
                    }
                }
                _ => {}
            },
        }
    }
    Ok(())
}

/// Resumes `thread` once, in its own task; a thread whose first turn has
/// not begun cannot be resumed yet ("no rollout found", measured), and is
/// tried again when it next waits on an approval.
fn resume(
    server: &AppServer,
    threads: &Arc<Mutex<Threads>>,
    resumed: &mut HashSet<String>,
    thread: &str,
) {
    if !resumed.insert(thread.to_owned()) {
        return;
    }
    let server = server.clone();
    let threads = threads.clone();
    let thread = thread.to_owned();
    tokio::spawn(async move {
        match server
            .request("thread/resume", json!({"threadId": thread}))
            .await
        {
            Ok(result) => {
                let cwd = result["thread"]["cwd"]
                    .as_str()
                    .or(result["cwd"].as_str())
                    .map(str::to_owned);
                threads.lock().expect("threads").cwd.insert(thread, cwd);
            }
            Err(e) => {
                tracing::debug!("thread {thread} not resumed yet: {e}");
                threads.lock().expect("threads").cwd.remove(&thread);
            }
        }
    });
}

/// Files `prompt` as an approval and answers request `id` with the
/// operator's verdict. Silence is never consent: a wait that ends
/// unanswered, or no operator, leaves the prompt to the terminal. When
/// the terminal answers first (`answered_here`), the item is withdrawn
/// as answered there.
async fn ask(
    server: AppServer,
    operator: Operator,
    id: Value,
    prompt: Prompt,
    answered_here: oneshot::Receiver<()>,
) {
    let caller = Caller {
        session_id: Some(prompt.thread.as_str().into()),
        asker: Asker {
            cwd: prompt.cwd.clone(),
            client: Some(CLIENT.to_owned()),
            ..Asker::default()
        },
        timeout_secs: operator.timeout.map(|t| t.as_secs_f64()),
        dialog: true,
        ..Caller::default()
    };
    let frame = ClientFrame::Approve {
        caller,
        tool_name: prompt.tool_name.clone(),
        input: prompt.input.clone(),
    };
    let answer = match Call::start_any(&operator.socket, &frame).await {
        Ok(Started::Pending(mut call)) => tokio::select! {
            waited = call.wait() => match waited {
                Ok(Waited::Settled(Outcome::Approved { scope })) => Some(prompt.allowed(Some(scope))),
                Ok(Waited::Settled(Outcome::Denied)) => Some(prompt.denied()),
                Ok(other) => {
                    tracing::debug!("the prompt stays the terminal's: {other:?}");
                    None
                }
                Err(e) => {
                    tracing::debug!("the operator's verdict did not come: {e}");
                    None
                }
            },
            Ok(()) = answered_here => {
                if let Err(e) = call.answered_at_agent().await {
                    tracing::debug!("the item was not withdrawn: {e}");
                }
                None
            }
        },
        // A grant the operator gave for this session covers it.
        Ok(Started::Decided {
            allow: true, scope, ..
        }) => Some(prompt.allowed(scope)),
        Ok(Started::Decided { allow: false, .. }) => None,
        Err(e) => {
            tracing::debug!("no operator for the prompt: {e}");
            None
        }
    };
    if let Some(answer) = answer
        && let Err(e) = server.respond(&id, answer)
    {
        tracing::debug!("the verdict did not reach Codex: {e}");
    }
}
