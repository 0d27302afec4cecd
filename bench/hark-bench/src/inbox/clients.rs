//! The clients: one thread per `hark mcp-operator-ask`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{RUN_TIMEOUT, START_TIMEOUT, ask_params, request_id};
use crate::logs::Tail;
use crate::rpc::{Peer, RpcError};

/// What went wrong with one client, and the end of its stderr.
#[derive(Debug, thiserror::Error)]
#[error("client {client}{stderr}")]
pub struct ClientError {
    pub client: usize,
    pub stderr: Tail,
    #[source]
    pub source: ClientFailure,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientFailure {
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("wrote on stdout: {line:?}")]
    WroteOnStdout { line: String },
}

impl ClientError {
    /// Client `client`'s failure, with the end of the stderr in `log`
    /// (`None`: not worth showing).
    pub fn new(client: usize, log: Option<&Path>, failure: impl Into<ClientFailure>) -> Self {
        ClientError {
            client,
            stderr: log.map_or_else(Tail::default, |log| Tail::of_file("its", log)),
            source: failure.into(),
        }
    }
}

/// From a client thread to the main loop.
#[derive(Debug)]
pub(super) enum Event {
    /// The client is initialized, or failed to be.
    Ready(Result<(), ClientError>),
    /// The first result for one of the client's calls arrived.
    Result,
}

/// From the main loop to a client thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Control {
    /// Send the asks.
    Go,
    /// Stop reading; close the client.
    Stop,
}

/// What one client saw.
#[derive(Debug, Default)]
pub(super) struct ClientReport {
    pub(super) client: usize,
    /// When its first ask was written.
    pub(super) first_sent: Option<Instant>,
    /// Per item, every result for its call, as read.
    pub(super) responses: Vec<Vec<(Instant, Value)>>,
    /// Responses whose id matched no call.
    pub(super) stray: usize,
    pub(super) stdout_clean: bool,
    pub(super) clean_exit: bool,
    pub(super) error: Option<ClientError>,
}

/// The client threads. Dropping it stops and joins them all, so no client
/// outlives the benchmark (each one's `Peer` kills its child if it must).
#[derive(Debug, Default)]
pub(super) struct Fleet {
    threads: Vec<(Sender<Control>, JoinHandle<ClientReport>)>,
}

impl Fleet {
    pub(super) fn start(
        &mut self,
        client: usize,
        per_client: usize,
        peer: Peer,
        log: PathBuf,
        events: Sender<Event>,
    ) {
        let (control_tx, control) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut report = ClientReport {
                client,
                responses: vec![Vec::new(); per_client],
                ..ClientReport::default()
            };
            drive_client(peer, &log, &events, &control, &mut report);
            report
        });
        self.threads.push((control_tx, thread));
    }

    pub(super) fn go(&self) {
        for (control, _) in &self.threads {
            let _ = control.send(Control::Go);
        }
    }

    /// Stops every client and collects what each saw.
    pub(super) fn finish(&mut self) -> Vec<ClientReport> {
        for (control, _) in &self.threads {
            let _ = control.send(Control::Stop);
        }
        self.threads
            .drain(..)
            .filter_map(|(_, thread)| thread.join().ok())
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.finish();
    }
}

fn drive_client(
    mut peer: Peer,
    log: &Path,
    events: &Sender<Event>,
    control: &Receiver<Control>,
    report: &mut ClientReport,
) {
    let client = report.client;
    let initialized = peer
        .initialize(1, START_TIMEOUT)
        .map(|_| ())
        .map_err(|e| ClientError::new(client, Some(log), e));
    let ready = initialized.is_ok();
    let _ = events.send(Event::Ready(initialized));
    if ready && control.recv() == Ok(Control::Go) {
        report.first_sent = Some(Instant::now());
        let mut sent = Ok(());
        for item in 0..report.responses.len() {
            sent = peer.request(request_id(item), "tools/call", ask_params(client, item));
            if sent.is_err() {
                break;
            }
        }
        match sent {
            Ok(()) => collect(&mut peer, events, control, report),
            Err(e) => report.error = Some(ClientError::new(client, Some(log), e)),
        }
    }
    match peer.close(RUN_TIMEOUT) {
        Ok(finished) => {
            report.stdout_clean = finished.stdout_clean;
            report.clean_exit = finished.status.success();
            if let Some(line) = finished.bad_line {
                report.error.get_or_insert(ClientError::new(
                    client,
                    None,
                    ClientFailure::WroteOnStdout { line },
                ));
            }
        }
        Err(e) => {
            report
                .error
                .get_or_insert(ClientError::new(client, Some(log), e));
        }
    }
}

/// Reads results until told to stop.
fn collect(
    peer: &mut Peer,
    events: &Sender<Event>,
    control: &Receiver<Control>,
    report: &mut ClientReport,
) {
    loop {
        if matches!(
            control.try_recv(),
            Ok(Control::Stop) | Err(TryRecvError::Disconnected)
        ) {
            break;
        }
        match peer.next_message(Duration::from_millis(20)) {
            Ok(None) => {}
            Ok(Some((at, message))) => {
                if message.get("method").is_some() {
                    continue; // a notification or a request from the server
                }
                let item = message
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|id| id.checked_sub(2))
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < report.responses.len());
                match item {
                    Some(item) => {
                        if report.responses[item].is_empty() {
                            let _ = events.send(Event::Result);
                        }
                        report.responses[item].push((at, message));
                    }
                    None => report.stray += 1,
                }
            }
            Err(e) => {
                report.error = Some(ClientError::new(report.client, None, e));
                break;
            }
        }
    }
}
