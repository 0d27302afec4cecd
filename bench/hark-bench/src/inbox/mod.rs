//! The inbox under load: `clients` concurrent `hark mcp-operator-ask`
//! processes each ask `per_client` questions at once of a `hark serve`
//! whose script answers nothing, and every question is answered through the
//! real CLI, as an operator on another terminal would: `hark inbox --json`
//! to see what waits, then `hark answer ID --pick LABEL`, [`ANSWER_POOL`] at
//! a time.
//!
//! It checks that none is lost and none answered twice, on both ends: every
//! tool call gets exactly one result with exactly the answer given, and
//! `hark inbox --all --json` ends with one `answered` item `by cli` per
//! question. It measures the wall time from the first ask to the last result,
//! and the daemon's peak RSS (`VmHWM`, read just before it is stopped).
//!
//! # Layout
//!
//! - this module: the questions asked, and [`measure`], the main loop.
//! - `clients`: one thread per `hark mcp-operator-ask`, asking and
//!   recording every result it reads.
//! - `operator`: `hark inbox --json` and `hark answer`, run as an operator
//!   would, a pool at a time; `listing` reads what `hark inbox` printed.
//! - `store`: the end check, `hark inbox --all --json`.
//! - `results`: what the run found, and the clients' reports tallied.
//! - `report`: the table and the final JSON line.

mod clients;
pub(crate) mod listing;
mod operator;
mod report;
mod results;
mod store;

use std::process::Stdio;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use hark_harness::{Daemon, DaemonError, ProcessError, Sandbox};
use serde_json::{Value, json};

use crate::logs::{LogFileError, log_file};
use crate::rpc::{Peer, peak_rss_kib};

use clients::{ClientError, ClientReport, Event, Fleet};
use operator::{Operator, OperatorError};
pub use report::report;
pub use results::Results;
use results::{LogSummary, StoreCheck, tally};
use store::{Unchecked, check_store};

/// How many `hark answer` run at once.
pub const ANSWER_POOL: usize = 8;
/// The whole answering phase, from the first ask; past it the run fails.
const DEADLINE: Duration = Duration::from_secs(600);
/// With no new result and no `hark answer` finishing for this long, the run
/// fails early instead of waiting out [`DEADLINE`].
const STALL: Duration = Duration::from_secs(60);
/// Every client's spawn → `initialize` response, together.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// One `hark inbox` or `hark answer` run; a client's exit. Under [`STALL`],
/// so a hung run is reported as such before the run stalls.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// The daemon's stderr may grow to this many bytes; past it the run is
/// stopped before the log fills the disk (a daemon that logs in a loop).
const LOG_LIMIT: u64 = 64 << 20;
/// How much of the daemon's log is read for the report.
const LOG_READ: u64 = 4 << 20;
/// When a listing brought nothing new, the pause before the next one.
const RELIST_PAUSE: Duration = Duration::from_millis(20);
/// After the last result, how long the clients keep reading, so a second
/// result for a call would still be counted.
const LINGER: Duration = Duration::from_millis(300);
/// How long the main loop waits for a result before it looks after the
/// operator's processes.
const TICK: Duration = Duration::from_millis(1);
/// How many examples of each kind of failure the report keeps.
const EXAMPLES: usize = 5;

/// The one question item `item` of client `client` asks.
fn question(client: usize, item: usize) -> String {
    format!("Client {client} item {item}?")
}

/// The label the operator picks for it.
fn label(client: usize, item: usize) -> &'static str {
    if (client + item).is_multiple_of(2) {
        "even"
    } else {
        "odd"
    }
}

/// The only tool-result text a correct answer may have.
fn expected_text(client: usize, item: usize) -> String {
    json!({ "answers": { question(client, item): label(client, item) } }).to_string()
}

/// `(client, item)` back from [`question`]'s text.
fn parse_question(text: &str) -> Option<(usize, usize)> {
    let rest = text.strip_prefix("Client ")?.strip_suffix('?')?;
    let (client, item) = rest.split_once(" item ")?;
    Some((client.parse().ok()?, item.parse().ok()?))
}

fn ask_params(client: usize, item: usize) -> Value {
    json!({
        "name": "ask",
        "arguments": {
            "questions": [{
                "question": question(client, item),
                "header": "Bench",
                "multiSelect": false,
                "options": [
                    { "label": "even", "description": "client + item is even" },
                    { "label": "odd", "description": "client + item is odd" }
                ]
            }]
        }
    })
}

/// The JSON-RPC id of item `item`'s call (`initialize` is 1).
fn request_id(item: usize) -> u64 {
    item as u64 + 2
}

/// Why the inbox could not be measured. What the run found wrong is in
/// its [`Results`], not here.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("only {ready} of {clients} clients initialized within {timeout:?}")]
    NotReady {
        ready: usize,
        clients: usize,
        timeout: Duration,
    },
    #[error("the clients went away")]
    ClientsGone,
    #[error(transparent)]
    Operator(#[from] OperatorError),
    #[error("cannot stop hark serve")]
    Stop(#[source] ProcessError),
}

/// Why the run stopped before every call had its result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Abort {
    #[error(
        "RUNAWAY LOG: the daemon wrote {} MB on stderr; stopped before it fills the disk",
        .bytes >> 20
    )]
    RunawayLog { bytes: u64 },
    #[error("DEADLINE: only {results} of {total} calls had a result after {DEADLINE:?}")]
    Deadline { results: usize, total: usize },
    #[error("STALLED: {results} of {total} calls had a result, and nothing moved for {STALL:?}")]
    Stalled { results: usize, total: usize },
}

/// Runs the mode with the sandbox's `hark`, all its state there.
pub fn measure(
    sandbox: &Sandbox,
    clients: usize,
    per_client: usize,
) -> Result<Results, InboxError> {
    // Declared before the daemon, so on an early return the daemon is killed
    // first and every call still waiting gets its error at once.
    let mut fleet = Fleet::default();
    let ask_timeout = DEADLINE.as_secs().to_string();
    let daemon = Daemon::start(sandbox, &json!({}), &["--ask-timeout", &ask_timeout])?;
    let daemon_pid = daemon.pid();

    let mut results = Results {
        clients,
        per_client,
        daemon_fd_limit: fd_soft_limit(daemon_pid),
        ..Results::default()
    };

    // Every client: spawned, then initialized on its own thread.
    let (events_tx, events) = mpsc::channel();
    let spawned = Instant::now();
    start_clients(sandbox, &mut fleet, per_client, clients, &events_tx)?;
    drop(events_tx);
    wait_ready(&events, clients, spawned + START_TIMEOUT)?;
    results.clients_ready_ms = spawned.elapsed().as_secs_f64() * 1e3;

    // Ask everything, and answer it from the command line.
    fleet.go();
    let mut operator = Operator::new(sandbox);
    let mut peak_fds = None;
    results.aborted = answer_all(
        &events,
        &mut operator,
        &daemon,
        clients * per_client,
        &mut peak_fds,
    )?;
    if results.aborted.is_some() {
        results.aborted_at = Some(Instant::now());
    }
    operator.abandon();
    linger(&events);

    // The store's view, while the daemon still runs. Not after an abort: the
    // daemon may not be answering, and it should be stopped at once.
    results.store = if results.aborted.is_some() {
        StoreCheck {
            error: Some(Unchecked::Aborted),
            ..StoreCheck::default()
        }
    } else {
        check_store(sandbox, clients, per_client)
    };
    results.daemon_peak_fds = peak_fds.max(open_fds(daemon_pid));
    results.operator = operator.stats;
    results.daemon_log = LogSummary::of(&daemon.log);
    let reports = stop(daemon, &mut fleet, &mut results)?;
    tally(&mut results, &reports);
    Ok(results)
}

/// Spawns `clients` `hark mcp-operator-ask`, each on its own thread, which
/// initializes it and reports on `events`.
fn start_clients(
    sandbox: &Sandbox,
    fleet: &mut Fleet,
    per_client: usize,
    clients: usize,
    events: &Sender<Event>,
) -> Result<(), InboxError> {
    for c in 0..clients {
        let log = sandbox.path(format!("inbox-client-{c}.stderr"));
        let mut command = sandbox.hark(["mcp-operator-ask"]);
        command
            .env("HARK_ASK_SOCK", sandbox.socket())
            .env("HARK_SESSION_ID", format!("client-{c}"))
            .stderr(Stdio::from(log_file(&log)?));
        let peer = Peer::spawn(&mut command).map_err(|e| ClientError::new(c, None, e))?;
        fleet.start(c, per_client, peer, log, events.clone());
    }
    Ok(())
}

/// Waits until all `clients` are initialized, up to `deadline`.
fn wait_ready(
    events: &Receiver<Event>,
    clients: usize,
    deadline: Instant,
) -> Result<(), InboxError> {
    let mut ready = 0;
    while ready < clients {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::Ready(Ok(()))) => ready += 1,
            Ok(Event::Ready(Err(e))) => return Err(e.into()),
            Ok(Event::Result) => {}
            Err(RecvTimeoutError::Timeout) => {
                return Err(InboxError::NotReady {
                    ready,
                    clients,
                    timeout: START_TIMEOUT,
                });
            }
            Err(RecvTimeoutError::Disconnected) => return Err(InboxError::ClientsGone),
        }
    }
    Ok(())
}

/// The main loop: answers from the command line until all `total` calls
/// have their result and the operator is idle, watching the daemon's open
/// files (its most in `peak_fds`) and its log on the way. Why it stopped
/// early, if it did.
fn answer_all(
    events: &Receiver<Event>,
    operator: &mut Operator,
    daemon: &Daemon,
    total: usize,
    peak_fds: &mut Option<usize>,
) -> Result<Option<Abort>, InboxError> {
    let go = Instant::now();
    let mut results_in = 0;
    let mut last_progress = go;
    let mut last_fd_sample = go;
    loop {
        // Wakes on the next result, or after a tick for the operator's own
        // child processes (which report through nothing but their exit).
        let mut next = events.recv_timeout(TICK).ok();
        while let Some(event) = next {
            if let Event::Result = event {
                results_in += 1;
                last_progress = Instant::now();
            }
            next = events.try_recv().ok();
        }
        if results_in >= total {
            operator.listing_wanted = false;
        }
        if operator.poll()? {
            last_progress = Instant::now();
        }
        if last_fd_sample.elapsed() >= Duration::from_millis(50) {
            last_fd_sample = Instant::now();
            *peak_fds = (*peak_fds).max(open_fds(daemon.pid()));
            let bytes = daemon.log.bytes();
            if bytes > LOG_LIMIT {
                return Ok(Some(Abort::RunawayLog { bytes }));
            }
        }
        if results_in >= total && operator.idle() {
            return Ok(None);
        }
        if go.elapsed() >= DEADLINE {
            return Ok(Some(Abort::Deadline {
                results: results_in,
                total,
            }));
        }
        if last_progress.elapsed() >= STALL {
            return Ok(Some(Abort::Stalled {
                results: results_in,
                total,
            }));
        }
    }
}

/// A second result for a call would arrive now: keeps taking events (the
/// clients record every response) until the [`LINGER`] window closes.
fn linger(events: &Receiver<Event>) {
    let linger_end = Instant::now() + LINGER;
    while let Some(left) = linger_end.checked_duration_since(Instant::now()) {
        if let Err(RecvTimeoutError::Disconnected) = events.recv_timeout(left) {
            break;
        }
    }
}

/// Stops the daemon and the clients, and collects what each client saw.
/// After an abort the daemon goes first: every waiting call gets its error
/// at once, so the clients can exit. The daemon's peak RSS is read just
/// before it is stopped.
fn stop(
    daemon: Daemon,
    fleet: &mut Fleet,
    results: &mut Results,
) -> Result<Vec<ClientReport>, InboxError> {
    let clients_first = results.aborted.is_none();
    let reports = if clients_first {
        fleet.finish()
    } else {
        Vec::new()
    };
    results.daemon_peak_rss_kib = peak_rss_kib(daemon.pid());
    results.daemon_clean_exit = daemon.stop().map_err(InboxError::Stop)?;
    Ok(if clients_first {
        reports
    } else {
        fleet.finish()
    })
}

fn push_example(examples: &mut Vec<String>, example: String) {
    if examples.len() < EXAMPLES {
        examples.push(example);
    }
}

/// How many file descriptors process `pid` has open.
fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// Process `pid`'s soft limit on open files.
fn fd_soft_limit(pid: u32) -> Option<String> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_round_trip() {
        assert_eq!(question(3, 7), "Client 3 item 7?");
        assert_eq!(parse_question(&question(3, 7)), Some((3, 7)));
        assert_eq!(parse_question("Client 3 item 7"), None);
        assert_eq!(parse_question("Which database?"), None);
        assert_eq!((label(3, 7), label(3, 8)), ("even", "odd"));
        assert_eq!(
            expected_text(0, 1),
            r#"{"answers":{"Client 0 item 1?":"odd"}}"#
        );
    }
}
