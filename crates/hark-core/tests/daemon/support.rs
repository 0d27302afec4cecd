//! The fixture: a daemon served in-process on a socket in a temp dir (the
//! listener's `run(listener, daemon, shutdown)` with a shutdown the test
//! holds), an operator the test answers, and the frames the tests send.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hark_core::bridge::client::request;
use hark_core::bridge::views::ItemView;
use hark_core::bridge::wire::{Caller, ClientFrame, ServerFrame, read_frame, write_frame};
use hark_core::config::Config;
use hark_core::daemon::listener::{self, Daemon};
use hark_core::model::ids::{Clock, ItemId, RunId, SessionId};
use hark_core::model::item::{Item, ItemFilter, Surface};
use hark_core::model::resolve::{Pick, Picks};
use hark_core::prompter::{OperatorPrompter, PromptFuture, Unanswered};
use hark_core::registry::Registry;
use hark_core::store::Store;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::BufReader;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The wait when a call names none: long, so only a test that means to
/// reach a deadline does (time is paused, so it costs nothing).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// A daemon serving `socket` on this runtime, with a store in its temp dir.
pub struct Served {
    pub socket: PathBuf,
    pub daemon: Daemon,
    /// Completes the listener's shutdown future.
    stop: Option<oneshot::Sender<()>>,
    serving: Option<JoinHandle<()>>,
    _dir: TempDir,
}

impl Served {
    /// Binds `hark.sock` in a fresh temp dir and spawns the listener on it,
    /// with `prompter` as the operator.
    pub fn start(prompter: impl OperatorPrompter) -> Served {
        Served::start_with(prompter, |_| {})
    }

    /// Like [`Served::start`], with the daemon as `adjust` leaves it (its
    /// id source, its clock).
    pub fn start_with(prompter: impl OperatorPrompter, adjust: impl FnOnce(&mut Daemon)) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("hark.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
        let registry = Registry::with_store(Some(Arc::new(store)));
        // No test dispatches a run: the dispatcher is never asked to start one.
        let mut daemon = Daemon::new(
            registry,
            Arc::new(prompter),
            &Config::default(),
            socket.clone(),
            dir.path().join("runs"),
        );
        adjust(&mut daemon);
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(listener::run(listener, daemon.clone(), async {
            let _ = stopped.await;
        }));
        Served {
            socket,
            daemon,
            stop: Some(stop),
            serving: Some(serving),
            _dir: dir,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.daemon.registry
    }

    /// Completes the shutdown future and waits for `run` to return.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            serving.await.unwrap();
        }
    }
}

/// The operator, as the test plays it: every item put to the operator
/// arrives on the receiver [`operator`] returns, to be answered (or not).
#[derive(Debug)]
pub struct Operator {
    prompts: mpsc::UnboundedSender<Prompt>,
}

/// One item in front of the operator.
#[derive(Debug)]
pub struct Prompt {
    pub item: Arc<Item>,
    answer: oneshot::Sender<Result<Picks, Unanswered>>,
}

impl Prompt {
    /// Returns `answered` from the prompter's `ask`.
    pub fn answer(self, answered: Result<Picks, Unanswered>) {
        self.answer.send(answered).unwrap();
    }

    /// Waits until the daemon drops the prompt (the item settled elsewhere
    /// and the operator is told to move on).
    pub async fn dropped(&mut self) {
        self.answer.closed().await;
    }
}

/// A prompter the test answers, and where its prompts arrive.
pub fn operator() -> (Operator, mpsc::UnboundedReceiver<Prompt>) {
    let (prompts, received) = mpsc::unbounded_channel();
    (Operator { prompts }, received)
}

impl OperatorPrompter for Operator {
    fn ask(&self, _session_id: &SessionId, item: Arc<Item>) -> PromptFuture {
        let (answer, answered) = oneshot::channel();
        let _ = self.prompts.send(Prompt { item, answer });
        Box::pin(async move {
            match answered.await {
                Ok(answered) => answered,
                // The test let the prompt go unanswered.
                Err(_) => std::future::pending().await,
            }
        })
    }

    fn surface(&self) -> Surface {
        Surface::Terminal
    }
}

/// A question in AskUserQuestion's shape.
pub fn question(text: &str, header: &str, labels: &[&str]) -> Value {
    json!({
        "question": text,
        "header": header,
        "multiSelect": false,
        "options": labels.iter().map(|l| json!({"label": l, "description": format!("pick {l}")})).collect::<Vec<_>>(),
    })
}

/// The question most tests ask; its default is Postgres.
pub fn db() -> Value {
    question(
        "Which database?",
        "Database",
        &["Postgres (Recommended)", "SQLite"],
    )
}

/// An ask frame for `request`, from `session`.
pub fn ask(session: &str, request: Value) -> ClientFrame {
    ClientFrame::Ask {
        caller: Caller {
            session_id: Some(session.into()),
            ..Caller::default()
        },
        request: json!({ "questions": [request] }),
    }
}

/// One label picked for one question.
pub fn picked(question: &str, label: &str) -> Picks {
    Picks::from([(question.to_owned(), Pick::Label(label.to_owned()))])
}

/// The item's record, as a `list` on the socket returns it.
pub async fn stored(socket: &Path, id: ItemId) -> ItemView {
    let mut items = list(
        socket,
        ItemFilter {
            id: Some(id),
            ..ItemFilter::default()
        },
    )
    .await;
    assert_eq!(items.len(), 1, "one record for {id}: {items:?}");
    items.remove(0)
}

/// `list` on the socket.
pub async fn list(socket: &Path, filter: ItemFilter) -> Vec<ItemView> {
    match request(socket, &ClientFrame::List { filter })
        .await
        .unwrap()
    {
        ServerFrame::Items { items, .. } => items,
        other => panic!("not a listing: {other:?}"),
    }
}

/// The run the relay tests' socket belongs to.
pub const RUN: RunId = RunId(uuid::Uuid::from_u128(1));

/// A value as it goes on the wire.
pub fn wire(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

/// A connection that speaks raw JSON frames.
pub struct Raw {
    reader: BufReader<OwnedReadHalf>,
    pub writer: OwnedWriteHalf,
}

impl Raw {
    pub async fn connect(socket: &Path) -> Raw {
        let (reader, writer) = UnixStream::connect(socket).await.unwrap().into_split();
        Raw {
            reader: BufReader::new(reader),
            writer,
        }
    }

    pub async fn send(&mut self, frame: &Value) {
        write_frame(&mut self.writer, frame).await.unwrap();
    }

    /// The next frame, or `None` when the server closed the connection.
    pub async fn next(&mut self) -> Option<Value> {
        let mut buf = Vec::new();
        read_frame(&mut self.reader, &mut buf)
            .await
            .unwrap()
            .then(|| serde_json::from_slice(&buf).unwrap())
    }
}
