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

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hark_harness::{Daemon, Lines, Sandbox};
use serde_json::{Value, json};

use crate::cold::with_stderr;
use crate::roundtrip::log_file;
use crate::rpc::{Peer, peak_rss_kib, wait_until};
use crate::stats::{Summary, round3};
use crate::{megabytes, yes_no};

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

/// What the run found.
#[derive(Debug, Default)]
pub struct Results {
    pub clients: usize,
    pub per_client: usize,
    /// Spawn of the first client → every client initialized.
    pub clients_ready_ms: f64,
    /// First ask written → last first-result read.
    pub wall: Duration,
    /// Per call: its client's first ask written → its result read.
    pub latency: Option<Summary>,
    /// Calls with exactly one result, not an error, exactly the expected text.
    pub correct: usize,
    /// Calls that got no result.
    pub lost: usize,
    /// Calls that got more than one result.
    pub duplicated: usize,
    /// Calls whose (first) result was an error or the wrong text.
    pub wrong: usize,
    /// Calls whose first result came only after the run was aborted (the
    /// errors the daemon's stop gives every waiting call).
    pub cut_off: usize,
    /// Results for ids nobody asked.
    pub stray: usize,
    pub examples: Vec<String>,
    pub operator: OperatorStats,
    pub store: StoreCheck,
    pub daemon_peak_rss_kib: Option<u64>,
    /// The most file descriptors the daemon had open when sampled, and its
    /// soft limit.
    pub daemon_peak_fds: Option<usize>,
    pub daemon_fd_limit: Option<String>,
    pub daemon_log: LogSummary,
    pub clients_stdout_clean: bool,
    pub clients_clean_exit: bool,
    pub daemon_clean_exit: bool,
    /// Why the run stopped before every call had its result, and when.
    pub aborted: Option<String>,
    aborted_at: Option<Instant>,
}

/// The daemon's stderr, summarized.
#[derive(Debug, Default)]
pub struct LogSummary {
    pub bytes: u64,
    /// `WARN` and `ERROR` lines (in the first [`LOG_READ`] bytes).
    pub warnings: usize,
    pub first_warning: Option<String>,
}

impl LogSummary {
    fn of(log: &Lines) -> LogSummary {
        let mut summary = LogSummary {
            bytes: log.bytes(),
            ..LogSummary::default()
        };
        let mut read = 0;
        let lines = log.since(0);
        let first = lines.iter().take_while(|l| {
            let before = read;
            read += l.text.len() as u64 + 1;
            before < LOG_READ
        });
        for line in first.map(|l| l.text.as_str()) {
            if line.contains(" WARN ") || line.contains(" ERROR ") {
                summary.warnings += 1;
                if summary.first_warning.is_none() {
                    summary.first_warning = Some(line.chars().take(200).collect());
                }
            }
        }
        summary
    }
}

impl Results {
    pub fn total(&self) -> usize {
        self.clients * self.per_client
    }

    /// Nothing lost, wrong or answered twice, and everything exited cleanly.
    pub fn sound(&self) -> bool {
        let total = self.total();
        let o = &self.operator;
        let s = &self.store;
        self.aborted.is_none()
            && self.correct == total
            && self.lost == 0
            && self.duplicated == 0
            && self.wrong == 0
            && self.stray == 0
            && o.double_answers == 0
            && o.failed == 0
            && o.unparsable == 0
            && o.answered_ok == total
            && s.error.is_none()
            && s.items == total
            && s.unique_ids == total
            && s.answered_by_cli == total
            && s.right_answers == total
            && s.questions_once == total
            && self.clients_stdout_clean
            && self.clients_clean_exit
            && self.daemon_clean_exit
    }
}

/// What the operator side did.
#[derive(Debug, Default)]
pub struct OperatorStats {
    /// `hark inbox --json` runs, and how long each took.
    pub listings: Vec<Duration>,
    /// Listing runs that failed (exit code or output).
    pub listing_failures: usize,
    /// The most pending items one listing returned, and the largest
    /// listing in bytes (one bridge frame, capped at 1 MiB).
    pub most_pending: usize,
    pub largest_listing_bytes: usize,
    /// `hark answer` runs, and how long each took.
    pub answer_runs: Vec<Duration>,
    /// Runs that exited 0.
    pub answered_ok: usize,
    /// Items that more than one run answered with exit 0.
    pub double_answers: usize,
    /// Runs refused with "already settled".
    pub already_settled: usize,
    /// Items still listed as pending by a listing started after a `hark
    /// answer` for them had succeeded.
    pub pending_after_answer: usize,
    /// Any other refusal or failure.
    pub failed: usize,
    /// Pending items whose question was not one of ours.
    pub unparsable: usize,
    /// Runs still going when the run was aborted, killed.
    pub killed_at_abort: Vec<String>,
    pub examples: Vec<String>,
}

/// What `hark inbox --all --json` said at the end.
#[derive(Debug, Default)]
pub struct StoreCheck {
    pub items: usize,
    /// The listing's size: it travels as one bridge frame, capped at 1 MiB.
    pub bytes: usize,
    pub unique_ids: usize,
    /// Outcome `answered` and `replied_by` `cli`.
    pub answered_by_cli: usize,
    /// Answered with exactly the label the operator picked.
    pub right_answers: usize,
    /// Distinct questions of ours that appear exactly once.
    pub questions_once: usize,
    /// Outcome name → count.
    pub outcomes: HashMap<String, usize>,
    pub error: Option<String>,
}

/// Runs the mode with the sandbox's `hark`, all its state there.
pub fn measure(sandbox: &Sandbox, clients: usize, per_client: usize) -> Result<Results, String> {
    let socket = sandbox.socket();
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
    for c in 0..clients {
        let log = sandbox.path(format!("inbox-client-{c}.stderr"));
        let mut command = sandbox.hark(["mcp-operator-ask"]);
        command
            .env("HARK_ASK_SOCK", &socket)
            .env("HARK_SESSION_ID", format!("client-{c}"))
            .stderr(Stdio::from(log_file(&log)?));
        let peer = Peer::spawn(&mut command)?;
        fleet.start(c, per_client, peer, log, events_tx.clone());
    }
    drop(events_tx);
    let mut ready = 0;
    let start_deadline = spawned + START_TIMEOUT;
    while ready < clients {
        let left = start_deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::Ready { error: None, .. }) => ready += 1,
            Ok(Event::Ready {
                client,
                error: Some(e),
            }) => return Err(format!("client {client}: {e}")),
            Ok(Event::Result) => {}
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "only {ready} of {clients} clients initialized within {START_TIMEOUT:?}"
                ));
            }
            Err(RecvTimeoutError::Disconnected) => return Err("the clients went away".into()),
        }
    }
    results.clients_ready_ms = spawned.elapsed().as_secs_f64() * 1e3;

    // Ask everything, and answer it from the command line.
    fleet.go();
    let go = Instant::now();
    let total = clients * per_client;
    let mut operator = Operator::new(sandbox);
    let mut results_in = 0;
    let mut last_progress = go;
    let mut peak_fds = None;
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
            peak_fds = peak_fds.max(open_fds(daemon_pid));
            let log_bytes = daemon.log.bytes();
            if log_bytes > LOG_LIMIT {
                results.aborted = Some(format!(
                    "RUNAWAY LOG: the daemon wrote {} MB on stderr; stopped before it fills the disk",
                    log_bytes >> 20
                ));
                break;
            }
        }
        if results_in >= total && operator.idle() {
            break;
        }
        if go.elapsed() >= DEADLINE {
            results.aborted = Some(format!(
                "DEADLINE: only {results_in} of {total} calls had a result after {DEADLINE:?}"
            ));
            break;
        }
        if last_progress.elapsed() >= STALL {
            results.aborted = Some(format!(
                "STALLED: {results_in} of {total} calls had a result, and nothing moved for {STALL:?}"
            ));
            break;
        }
    }
    if results.aborted.is_some() {
        results.aborted_at = Some(Instant::now());
    }
    operator.abandon();
    // A second result for a call would arrive now: keep taking events (the
    // clients record every response) until the window closes.
    let linger_end = Instant::now() + LINGER;
    while let Some(left) = linger_end.checked_duration_since(Instant::now()) {
        if let Err(RecvTimeoutError::Disconnected) = events.recv_timeout(left) {
            break;
        }
    }

    // The store's view, while the daemon still runs. Not after an abort: the
    // daemon may not be answering, and it should be stopped at once.
    results.store = if results.aborted.is_some() {
        StoreCheck {
            error: Some("not checked: the run was aborted".into()),
            ..StoreCheck::default()
        }
    } else {
        check_store(sandbox, clients, per_client)
    };
    results.daemon_peak_fds = peak_fds.max(open_fds(daemon_pid));
    results.operator = operator.stats;
    results.daemon_log = LogSummary::of(&daemon.log);
    let reports = if results.aborted.is_some() {
        // Stop the daemon first: every waiting call gets its error at once,
        // so the clients can exit.
        results.daemon_peak_rss_kib = peak_rss_kib(daemon_pid);
        results.daemon_clean_exit = daemon.stop()?;
        fleet.finish()
    } else {
        let reports = fleet.finish();
        results.daemon_peak_rss_kib = peak_rss_kib(daemon_pid);
        results.daemon_clean_exit = daemon.stop()?;
        reports
    };
    tally(&mut results, &reports);
    Ok(results)
}

/// Counts the clients' results into `results`.
fn tally(results: &mut Results, reports: &[ClientReport]) {
    let mut latencies = Vec::new();
    let mut first_ask: Option<Instant> = None;
    let mut last_result: Option<Instant> = None;
    results.clients_stdout_clean = reports.len() == results.clients;
    results.clients_clean_exit = reports.len() == results.clients;
    for report in reports {
        results.clients_stdout_clean &= report.stdout_clean;
        results.clients_clean_exit &= report.clean_exit;
        if let Some(e) = &report.error {
            push_example(
                &mut results.examples,
                format!("client {}: {e}", report.client),
            );
        }
        if let Some(sent) = report.first_sent {
            first_ask = Some(first_ask.map_or(sent, |t| t.min(sent)));
        }
        results.stray += report.stray;
        for (item, responses) in report.responses.iter().enumerate() {
            let Some((at, first)) = responses.first() else {
                results.lost += 1;
                push_example(
                    &mut results.examples,
                    format!("lost: {:?} got no result", question(report.client, item)),
                );
                continue;
            };
            last_result = Some(last_result.map_or(*at, |t| t.max(*at)));
            if let Some(sent) = report.first_sent {
                latencies.push(at.saturating_duration_since(sent));
            }
            if results.aborted_at.is_some_and(|t| *at >= t) {
                results.cut_off += 1;
                continue;
            }
            let right = crate::rpc::is_expected(first, &expected_text(report.client, item));
            if responses.len() > 1 {
                results.duplicated += 1;
                push_example(
                    &mut results.examples,
                    format!(
                        "duplicated: {:?} got {} results",
                        question(report.client, item),
                        responses.len()
                    ),
                );
            } else if right {
                results.correct += 1;
            }
            if !right {
                results.wrong += 1;
                push_example(
                    &mut results.examples,
                    format!("wrong: {:?} got {first}", question(report.client, item)),
                );
            }
        }
    }
    if let (Some(first), Some(last)) = (first_ask, last_result) {
        results.wall = last.saturating_duration_since(first);
    }
    results.latency = Summary::of_durations(&latencies);
}

fn push_example(examples: &mut Vec<String>, example: String) {
    if examples.len() < EXAMPLES {
        examples.push(example);
    }
}

// ---------------------------------------------------------------------------
// The clients: one thread per `hark mcp-operator-ask`.

/// From a client thread to the main loop.
#[derive(Debug)]
enum Event {
    Ready {
        client: usize,
        error: Option<String>,
    },
    /// The first result for one of the client's calls arrived.
    Result,
}

/// From the main loop to a client thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    /// Send the asks.
    Go,
    /// Stop reading; close the client.
    Stop,
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientReport {
    client: usize,
    /// When its first ask was written.
    first_sent: Option<Instant>,
    /// Per item, every result for its call, as read.
    responses: Vec<Vec<(Instant, Value)>>,
    /// Responses whose id matched no call.
    stray: usize,
    stdout_clean: bool,
    clean_exit: bool,
    error: Option<String>,
}

/// The client threads. Dropping it stops and joins them all, so no client
/// outlives the benchmark (each one's `Peer` kills its child if it must).
#[derive(Debug, Default)]
struct Fleet {
    threads: Vec<(Sender<Control>, JoinHandle<ClientReport>)>,
}

impl Fleet {
    fn start(
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

    fn go(&self) {
        for (control, _) in &self.threads {
            let _ = control.send(Control::Go);
        }
    }

    /// Stops every client and collects what each saw.
    fn finish(&mut self) -> Vec<ClientReport> {
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
    let initialized = peer.initialize(1, START_TIMEOUT);
    let _ = events.send(Event::Ready {
        client,
        error: initialized
            .as_ref()
            .err()
            .map(|e| with_stderr(e.clone(), log)),
    });
    if initialized.is_ok() && control.recv() == Ok(Control::Go) {
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
            Err(e) => report.error = Some(with_stderr(e, log)),
        }
    }
    match peer.close(RUN_TIMEOUT) {
        Ok(finished) => {
            report.stdout_clean = finished.stdout_clean;
            report.clean_exit = finished.status.success();
            if let Some(line) = finished.bad_line {
                report
                    .error
                    .get_or_insert(format!("wrote on stdout: {line:?}"));
            }
        }
        Err(e) => {
            report.error.get_or_insert(with_stderr(e, log));
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
                report.error = Some(e);
                break;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The operator: `hark inbox --json` and `hark answer`, from the command line.

/// A CLI run in flight, killed if abandoned.
#[derive(Debug)]
struct Run {
    child: Child,
    started: Instant,
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A `hark answer` in flight.
#[derive(Debug)]
struct Answering {
    run: Run,
    id: String,
    stderr: PathBuf,
}

struct Operator<'a> {
    sandbox: &'a Sandbox,
    listing: Option<Run>,
    /// Whether to list again (not once every call has its result).
    listing_wanted: bool,
    /// When the last listing ended, and whether it brought anything new.
    last_listing: Option<(Instant, bool)>,
    queue: VecDeque<(String, &'static str)>,
    queued: HashSet<String>,
    answering: Vec<Option<Answering>>,
    /// Per item id: when a `hark answer` for it last succeeded.
    answered: HashMap<String, Instant>,
    stats: OperatorStats,
}

impl<'a> Operator<'a> {
    fn new(sandbox: &'a Sandbox) -> Operator<'a> {
        Operator {
            sandbox,
            listing: None,
            listing_wanted: true,
            last_listing: None,
            queue: VecDeque::new(),
            queued: HashSet::new(),
            answering: (0..ANSWER_POOL).map(|_| None).collect(),
            answered: HashMap::new(),
            stats: OperatorStats::default(),
        }
    }

    /// `hark ARGS` on the daemon's socket.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.sandbox.hark(args);
        command.stdin(Stdio::null());
        command
    }

    /// Nothing running and nothing queued.
    fn idle(&self) -> bool {
        self.listing.is_none()
            && self.queue.is_empty()
            && self.answering.iter().all(Option::is_none)
    }

    /// Kills whatever still runs, and notes it.
    fn abandon(&mut self) {
        if let Some(run) = self.listing.take() {
            self.stats.killed_at_abort.push(format!(
                "hark inbox --json, after {:.1} s",
                run.started.elapsed().as_secs_f64()
            ));
        }
        for a in self.answering.iter_mut().filter_map(Option::take) {
            self.stats.killed_at_abort.push(format!(
                "hark answer {}, after {:.1} s",
                a.id,
                a.run.started.elapsed().as_secs_f64()
            ));
        }
    }

    /// One turn: reap finished runs, start new ones. `Ok(true)` when a
    /// `hark answer` finished (progress).
    fn poll(&mut self) -> Result<bool, String> {
        let mut progress = false;
        for slot in 0..self.answering.len() {
            let finished = match &mut self.answering[slot] {
                Some(a) => a.run.child.try_wait().map_err(|e| e.to_string())?,
                None => None,
            };
            let timed_out = self.answering[slot]
                .as_ref()
                .is_some_and(|a| a.run.started.elapsed() >= RUN_TIMEOUT);
            if (finished.is_some() || timed_out)
                && let Some(a) = self.answering[slot].take()
            {
                self.answer_finished(a, finished.and_then(|s| s.code()));
                progress = true;
            }
        }
        self.poll_listing()?;
        while !self.queue.is_empty()
            && let Some(slot) = self.answering.iter().position(Option::is_none)
        {
            let Some((id, label)) = self.queue.pop_front() else {
                break;
            };
            self.queued.remove(&id);
            let stderr = self.sandbox.path(format!("inbox-answer-{slot}.stderr"));
            let child = self
                .command(&["answer", &id, "--pick", label])
                .stdout(Stdio::null())
                .stderr(Stdio::from(log_file(&stderr)?))
                .spawn()
                .map_err(|e| format!("cannot start hark answer: {e}"))?;
            self.answering[slot] = Some(Answering {
                run: Run {
                    child,
                    started: Instant::now(),
                },
                id,
                stderr,
            });
        }
        Ok(progress)
    }

    fn answer_finished(&mut self, a: Answering, code: Option<i32>) {
        let took = a.run.started.elapsed();
        drop(a.run); // kills it if it timed out
        self.stats.answer_runs.push(took);
        let stderr = std::fs::read_to_string(&a.stderr).unwrap_or_default();
        match code {
            Some(0) => {
                self.stats.answered_ok += 1;
                if self.answered.insert(a.id.clone(), Instant::now()).is_some() {
                    self.stats.double_answers += 1;
                    push_example(
                        &mut self.stats.examples,
                        format!("answered twice with exit 0: {}", a.id),
                    );
                }
            }
            _ if stderr.contains("already settled") => self.stats.already_settled += 1,
            _ => {
                self.stats.failed += 1;
                let why = code.map_or_else(
                    || format!("no exit code after {took:?}"),
                    |c| format!("exit {c}"),
                );
                push_example(
                    &mut self.stats.examples,
                    format!("hark answer {} failed ({why}): {}", a.id, stderr.trim()),
                );
            }
        }
    }

    fn poll_listing(&mut self) -> Result<(), String> {
        let out = self.sandbox.path("inbox-list.json");
        let err = self.sandbox.path("inbox-list.stderr");
        let Some(listing) = &mut self.listing else {
            // Only list again once everything listed is on its way.
            let due = self
                .last_listing
                .is_none_or(|(ended, fresh)| fresh || ended.elapsed() >= RELIST_PAUSE);
            if self.listing_wanted && self.queue.is_empty() && due {
                let child = self
                    .command(&["inbox", "--json"])
                    .stdout(Stdio::from(log_file(&out)?))
                    .stderr(Stdio::from(log_file(&err)?))
                    .spawn()
                    .map_err(|e| format!("cannot start hark inbox: {e}"))?;
                self.listing = Some(Run {
                    child,
                    started: Instant::now(),
                });
            }
            return Ok(());
        };
        let status = listing.child.try_wait().map_err(|e| e.to_string())?;
        let started = listing.started;
        if status.is_none() && started.elapsed() < RUN_TIMEOUT {
            return Ok(());
        }
        self.listing = None; // kills it if it timed out
        self.stats.listings.push(started.elapsed());
        let listed = match status {
            Some(s) if s.success() => std::fs::read_to_string(&out)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    let bytes = &mut self.stats.largest_listing_bytes;
                    *bytes = (*bytes).max(text.len());
                    pending_items(&text)
                }),
            Some(s) => Err(format!(
                "{s}: {}",
                std::fs::read_to_string(&err).unwrap_or_default().trim()
            )),
            None => Err(format!("no answer within {RUN_TIMEOUT:?}")),
        };
        let mut fresh = false;
        match listed {
            Ok(items) => {
                self.stats.most_pending = self.stats.most_pending.max(items.len());
                for (id, question) in items {
                    let busy = self.queued.contains(&id)
                        || self.answering.iter().flatten().any(|a| a.id == id);
                    if busy {
                        continue;
                    }
                    if let Some(answered) = self.answered.get(&id) {
                        if *answered > started {
                            continue; // this listing began before that answer
                        }
                        self.stats.pending_after_answer += 1;
                        push_example(
                            &mut self.stats.examples,
                            format!("still pending after hark answer succeeded: {id}"),
                        );
                    }
                    let Some((c, i)) = parse_question(&question) else {
                        self.stats.unparsable += 1;
                        push_example(
                            &mut self.stats.examples,
                            format!("not our question: {question:?} ({id})"),
                        );
                        continue;
                    };
                    self.queued.insert(id.clone());
                    self.queue.push_back((id, label(c, i)));
                    fresh = true;
                }
            }
            Err(e) => {
                self.stats.listing_failures += 1;
                push_example(
                    &mut self.stats.examples,
                    format!("hark inbox --json failed: {e}"),
                );
            }
        }
        self.last_listing = Some((Instant::now(), fresh));
        Ok(())
    }
}

/// `(id, first question)` of every pending item in `hark inbox --json`'s output.
fn pending_items(text: &str) -> Result<Vec<(String, String)>, String> {
    let items: Value =
        serde_json::from_str(text).map_err(|e| format!("output is not JSON: {e}"))?;
    let items = items.as_array().ok_or("output is not a JSON array")?;
    items
        .iter()
        .filter(|item| item.get("outcome").is_none_or(Value::is_null))
        .map(|item| {
            let id = item.get("id").and_then(Value::as_str);
            let question = item
                .pointer("/request/questions/0/question")
                .and_then(Value::as_str);
            match (id, question) {
                (Some(id), Some(q)) => Ok((id.to_owned(), q.to_owned())),
                _ => Err(format!("an item without id or question: {item}")),
            }
        })
        .collect()
}

/// Lists the whole inbox (`hark inbox --all --json`) and checks it.
fn check_store(sandbox: &Sandbox, clients: usize, per_client: usize) -> StoreCheck {
    let mut check = StoreCheck::default();
    let out = sandbox.path("inbox-all.json");
    let err = sandbox.path("inbox-all.stderr");
    let text = (|| {
        let mut run = Run {
            child: sandbox
                .hark(["inbox", "--all", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::from(log_file(&out)?))
                .stderr(Stdio::from(log_file(&err)?))
                .spawn()
                .map_err(|e| format!("cannot start hark inbox: {e}"))?,
            started: Instant::now(),
        };
        let status = wait_until(&mut run.child, Instant::now() + RUN_TIMEOUT)?
            .ok_or(format!("no answer within {RUN_TIMEOUT:?}"))?;
        if !status.success() {
            let stderr = std::fs::read_to_string(&err).unwrap_or_default();
            return Err(format!("{status}: {}", stderr.trim()));
        }
        std::fs::read_to_string(&out).map_err(|e| e.to_string())
    })();
    let items = match text.and_then(|t| {
        check.bytes = t.len();
        serde_json::from_str::<Value>(&t).map_err(|e| format!("output is not JSON: {e}"))
    }) {
        Ok(Value::Array(items)) => items,
        Ok(_) => {
            check.error = Some("hark inbox --all --json: output is not a JSON array".into());
            return check;
        }
        Err(e) => {
            check.error = Some(format!("hark inbox --all --json failed: {e}"));
            return check;
        }
    };
    check.items = items.len();
    let mut ids = HashSet::new();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for item in &items {
        if let Some(id) = item.get("id").and_then(Value::as_str) {
            ids.insert(id.to_owned());
        }
        let outcome = item
            .pointer("/outcome/outcome")
            .and_then(Value::as_str)
            .unwrap_or("pending");
        *check.outcomes.entry(outcome.to_owned()).or_default() += 1;
        let by_cli = item.get("replied_by").and_then(Value::as_str) == Some("cli");
        if outcome == "answered" && by_cli {
            check.answered_by_cli += 1;
        }
        let asked = item
            .pointer("/request/questions/0/question")
            .and_then(Value::as_str)
            .and_then(parse_question)
            .filter(|&(c, i)| c < clients && i < per_client);
        if let Some((c, i)) = asked {
            *seen.entry((c, i)).or_default() += 1;
            let session_ok =
                item.get("session_id").and_then(Value::as_str) == Some(&format!("client-{c}"));
            let answers = item.pointer("/outcome/answers");
            if session_ok && answers == Some(&json!({ question(c, i): label(c, i) })) {
                check.right_answers += 1;
            }
        }
    }
    check.unique_ids = ids.len();
    check.questions_once = seen.values().filter(|&&n| n == 1).count();
    check
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

// ---------------------------------------------------------------------------
// The report.

/// Prints the table and the final JSON line; returns [`Results::sound`].
pub fn report(r: &Results) -> bool {
    let total = r.total();
    let o = &r.operator;
    let s = &r.store;
    let secs = r.wall.as_secs_f64();
    let rate = if secs > 0.0 {
        r.correct as f64 / secs
    } else {
        0.0
    };
    let listing = Summary::of_durations(&o.listings);
    let answering = Summary::of_durations(&o.answer_runs);
    let mb = r.daemon_peak_rss_kib.map(|k| k as f64 * 1024.0 / 1e6);
    let row = |what: &str, value: String| println!("  {what:<40} {value}");

    println!(
        "inbox: {total} items asked by {} concurrent hark mcp-operator-ask ({} each) of hark serve --prompter script:{{}},\n  all answered with `hark answer` ({ANSWER_POOL} at a time) from `hark inbox --json`",
        r.clients, r.per_client
    );
    row(
        "clients spawned and initialized",
        format!("{:.0} ms", r.clients_ready_ms),
    );
    row(
        "wall time, first ask → last result",
        format!("{secs:.3} s  ({rate:.1} items/s)"),
    );
    if let Some(l) = r.latency {
        row(
            "ask → result per call, ms",
            format!(
                "p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}",
                l.p50, l.p90, l.p99, l.max
            ),
        );
    }
    row(
        "hark inbox --json runs",
        format!(
            "{}{}  (most pending in one listing: {}, {} KB; failed: {})",
            o.listings.len(),
            listing.map_or(String::new(), |l| format!(
                ", ms each p50 {:.1} max {:.1}",
                l.p50, l.max
            )),
            o.most_pending,
            o.largest_listing_bytes / 1000,
            o.listing_failures
        ),
    );
    row(
        "hark answer runs",
        format!(
            "{}{}",
            o.answer_runs.len(),
            answering.map_or(String::new(), |a| format!(
                ", ms each p50 {:.1} p99 {:.1} max {:.1}",
                a.p50, a.p99, a.max
            ))
        ),
    );
    row(
        "  exit 0 / already settled / other",
        format!("{} / {} / {}", o.answered_ok, o.already_settled, o.failed),
    );
    row(
        "  double answers (exit 0 twice, one id)",
        o.double_answers.to_string(),
    );
    row(
        "  pending again after answered",
        o.pending_after_answer.to_string(),
    );
    row(
        "calls: exactly one correct result",
        format!(
            "{}/{total}  (lost {}, duplicated {}, wrong {}, stray {}, cut off by the abort {})",
            r.correct, r.lost, r.duplicated, r.wrong, r.stray, r.cut_off
        ),
    );
    match &s.error {
        Some(e) => row("hark inbox --all --json", e.clone()),
        None => {
            let mut outcomes: Vec<_> = s.outcomes.iter().collect();
            outcomes.sort();
            let outcomes: Vec<String> = outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            row(
                "hark inbox --all --json",
                format!(
                    "{} items ({} KB), {} unique ids, {} answered by cli, {} right answers, {} questions exactly once  ({})",
                    s.items,
                    s.bytes / 1000,
                    s.unique_ids,
                    s.answered_by_cli,
                    s.right_answers,
                    s.questions_once,
                    outcomes.join(", ")
                ),
            );
        }
    }
    row("daemon peak RSS (VmHWM)", megabytes(mb));
    row(
        "daemon open fds, most sampled",
        format!(
            "{}  (soft limit {})",
            r.daemon_peak_fds.map_or("?".into(), |n| n.to_string()),
            r.daemon_fd_limit.as_deref().unwrap_or("?")
        ),
    );
    row(
        "daemon stderr",
        format!(
            "{} KB, {} warnings/errors{}",
            r.daemon_log.bytes / 1000,
            r.daemon_log.warnings,
            r.daemon_log
                .first_warning
                .as_ref()
                .map_or(String::new(), |w| format!(", first: {w}"))
        ),
    );
    row(
        "clients: stdout only JSON-RPC / exit 0",
        format!(
            "{} / {}",
            yes_no(r.clients_stdout_clean),
            yes_no(r.clients_clean_exit)
        ),
    );
    row(
        "daemon exited cleanly on SIGTERM",
        yes_no(r.daemon_clean_exit).into(),
    );
    for example in r.examples.iter().chain(&o.examples) {
        println!("  ! {example}");
    }
    for killed in &o.killed_at_abort {
        println!("  ! killed at the abort: {killed}");
    }
    let sound = r.sound();
    if let Some(why) = &r.aborted {
        println!("  {why}");
    }
    if !sound {
        println!(
            "  something was LOST, WRONG, ANSWERED TWICE or could not be checked (see above): exit code 1"
        );
    }

    let report = json!({
        "inbox": {
            "clients": r.clients,
            "items_per_client": r.per_client,
            "items": total,
            "answer_pool": ANSWER_POOL,
            "clients_ready_ms": round3(r.clients_ready_ms),
            "wall_s": round3(secs),
            "items_per_s": round3(rate),
            "ask_to_result_ms": r.latency.map(Summary::to_json),
            "listings": o.listings.len(),
            "listing_ms": listing.map(Summary::to_json),
            "listing_failures": o.listing_failures,
            "most_pending_listed": o.most_pending,
            "largest_listing_bytes": o.largest_listing_bytes,
            "answer_runs": o.answer_runs.len(),
            "answer_ms": answering.map(Summary::to_json),
            "answered_ok": o.answered_ok,
            "already_settled": o.already_settled,
            "answer_failures": o.failed,
            "double_answers": o.double_answers,
            "pending_after_answer": o.pending_after_answer,
            "unparsable": o.unparsable,
            "correct": r.correct,
            "lost": r.lost,
            "duplicated": r.duplicated,
            "wrong": r.wrong,
            "stray": r.stray,
            "cut_off": r.cut_off,
            "killed_at_abort": o.killed_at_abort,
            "daemon_log": {
                "bytes": r.daemon_log.bytes,
                "warnings": r.daemon_log.warnings,
                "first_warning": r.daemon_log.first_warning,
            },
            "store": {
                "items": s.items,
                "bytes": s.bytes,
                "unique_ids": s.unique_ids,
                "answered_by_cli": s.answered_by_cli,
                "right_answers": s.right_answers,
                "questions_once": s.questions_once,
                "outcomes": s.outcomes,
                "error": s.error,
            },
            "daemon_peak_rss_mb": mb.map(round3),
            "daemon_peak_rss_kib": r.daemon_peak_rss_kib,
            "daemon_peak_fds": r.daemon_peak_fds,
            "daemon_fd_soft_limit": r.daemon_fd_limit,
            "clients_stdout_clean": r.clients_stdout_clean,
            "clients_clean_exit": r.clients_clean_exit,
            "daemon_clean_exit": r.daemon_clean_exit,
            "aborted": r.aborted,
        },
        "sound": sound,
    });
    println!("{report}");
    sound
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

    #[test]
    fn only_pending_items_are_listed() {
        let text = json!([
            {"id": "a", "outcome": null, "request": {"questions": [{"question": "Client 0 item 0?"}]}},
            {"id": "b", "outcome": {"outcome": "answered"}, "request": {"questions": [{"question": "Client 0 item 1?"}]}}
        ])
        .to_string();
        assert_eq!(
            pending_items(&text).unwrap(),
            vec![("a".to_owned(), "Client 0 item 0?".to_owned())]
        );
        assert!(pending_items("nope").is_err());
    }
}
