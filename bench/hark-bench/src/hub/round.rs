//! One round: `asks` agents (`hark mcp-operator-ask` on their daemon's
//! socket, spread over the hosts) ask at once; once every daemon shows
//! every ask, each is answered in turn with `hark answer` on the next host
//! (its own when there is one), and the agent's result is awaited before
//! the next answer, so each answer's time is its own.
//!
//! Each agent's MCP server is started by a shell standing for the agent
//! (see [`AGENT_SHELL`]).

use std::collections::HashSet;
use std::process::{Child, Stdio};
use std::time::{Instant, SystemTime};

use hark_harness::WaitError;
use hark_harness::clock::ms_between;
use serde_json::{Value, json};

use super::logs::{Seen, find_keyed, wait_keyed};
use super::team::Host;
use super::{ANSWER_PATIENCE, ASK_PATIENCE, LINGER};
use crate::logs::{LogFileError, Tail, log_file};
use crate::rpc::{Peer, RpcError, is_expected};

const ASKED: &str = "operator.question.asked";
const ANSWERED: &str = "operator.question.answered";
/// The JSON-RPC id of every agent's one call (`initialize` is 1).
const CALL: u64 = 2;
/// A shell stands for each asking agent and starts its MCP server (`$0
/// mcp-operator-ask`), as the tests' agents do: the daemon watches the
/// server's parent as the agent, and refuses operator frames from inside
/// it, so the bench, which runs `hark answer`, must be outside it (as the
/// operator's terminal is). (A background command's stdin is /dev/null
/// unless given back.)
const AGENT_SHELL: &str = "exec 3<&0; \"$0\" mcp-operator-ask <&3 3<&- & wait";
/// How many examples of what went wrong the report keeps.
const EXAMPLES: usize = 8;

/// Why a round could not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    #[error(transparent)]
    Log(#[from] LogFileError),
    #[error("asking agent {ask}{stderr}")]
    Agent {
        ask: usize,
        stderr: Tail,
        #[source]
        source: RpcError,
    },
    #[error("hark serve on {host} did not show every ask")]
    NotShown {
        host: String,
        #[source]
        source: WaitError,
    },
    #[error("cannot start hark answer")]
    Answer(#[source] std::io::Error),
}

/// The question ask `i` of round `round` asks (each round its own, so one
/// round's items are told from another's in an inbox).
pub fn question(round: &str, i: usize) -> String {
    format!("Hub bench {round} ask {i}?")
}

/// The label its answer picks.
pub fn label(i: usize) -> &'static str {
    if i.is_multiple_of(2) { "even" } else { "odd" }
}

/// Ask `i` of round `round` back from its question's text.
pub fn parse_question(round: &str, text: &str) -> Option<usize> {
    text.strip_prefix("Hub bench ")?
        .strip_prefix(round)?
        .strip_prefix(" ask ")?
        .strip_suffix('?')?
        .parse()
        .ok()
}

fn session(round: &str, i: usize) -> String {
    format!("{round}-ask-{i}")
}

/// Which host asks `i`, and which answers it, of `hosts`.
pub fn asker_answerer(i: usize, hosts: usize) -> (usize, usize) {
    (i % hosts, (i + 1) % hosts)
}

fn ask_params(round: &str, i: usize) -> Value {
    json!({
        "name": "ask",
        "arguments": {
            "questions": [{
                "question": question(round, i),
                "header": "Bench",
                "multiSelect": false,
                "options": [
                    { "label": "even", "description": "the ask's number is even" },
                    { "label": "odd", "description": "the ask's number is odd" }
                ]
            }]
        }
    })
}

/// What one round measured and found.
#[derive(Debug, Default)]
pub struct Round {
    pub label: &'static str,
    pub hosts: usize,
    pub asks: usize,
    /// Per ask, ms: the ask written → its own daemon's `asked` line.
    pub own_notice: Vec<f64>,
    /// The ask written → each other daemon's `asked` line (with one
    /// daemon: its own).
    pub notice: Vec<f64>,
    /// `hark answer` started → the agent's result read.
    pub answer_to_result: Vec<f64>,
    /// The answering daemon's `answered` line → the asking daemon's (only
    /// when they differ).
    pub relay: Vec<f64>,
    /// Each `hark answer` run, start → exit.
    pub answer_runs: Vec<f64>,
    /// Per ask, the item's id (as its own daemon logged it).
    pub ids: Vec<Option<String>>,
    pub correct: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub wrong: usize,
    /// `hark answer` runs that did not exit 0.
    pub answer_failures: usize,
    /// Asks some daemon showed under another id than the asker's.
    pub id_mismatches: usize,
    pub agents_clean_exit: bool,
    pub examples: Vec<String>,
}

impl Round {
    /// Runs a round of `asks` over `hosts`; `pending` is called once every
    /// daemon shows every ask, before the first answer.
    pub fn run(
        label: &'static str,
        hosts: &[&Host],
        asks: usize,
        pending: impl FnOnce(),
    ) -> Result<Round, RoundError> {
        let mut round = Round {
            label,
            hosts: hosts.len(),
            asks,
            ..Round::default()
        };
        let mut agents = start_agents(label, hosts, asks)?;
        let from: Vec<usize> = hosts.iter().map(|h| h.log().len()).collect();
        let mut sent = Vec::with_capacity(asks);
        for (i, agent) in agents.iter_mut().enumerate() {
            sent.push(SystemTime::now());
            agent
                .request(CALL, "tools/call", ask_params(label, i))
                .map_err(|source| agent_error(label, hosts, i, source))?;
        }
        let sessions: HashSet<String> = (0..asks).map(|i| session(label, i)).collect();
        let mut shown = Vec::new();
        for (host, &from) in hosts.iter().zip(&from) {
            let seen = wait_keyed(
                host.log(),
                from,
                ASKED,
                "session_id",
                &sessions,
                ASK_PATIENCE,
            )
            .map_err(|source| RoundError::NotShown {
                host: host.name.clone(),
                source,
            })?;
            shown.push(seen);
        }
        pending();
        let mut responses = vec![Vec::new(); asks];
        for i in 0..asks {
            let seen: Vec<&Seen> = shown.iter().map(|s| &s[&session(label, i)]).collect();
            round.noticed(i, sent[i], &seen);
            let (_, answerer) = asker_answerer(i, hosts.len());
            let id = round.ids[i].clone().unwrap_or_default();
            let response = round.answer(hosts[answerer], &id, i, &mut agents[i])?;
            responses[i].extend(response);
        }
        linger(&mut agents, &mut responses);
        round.tally(&responses);
        round.relays(hosts, &from);
        round.agents_clean_exit = close(agents, &mut round.examples);
        Ok(round)
    }

    /// Ask `i`, written at `sent`, as each host showed it.
    fn noticed(&mut self, i: usize, sent: SystemTime, seen: &[&Seen]) {
        let (asker, _) = asker_answerer(i, seen.len());
        let own = seen[asker];
        self.own_notice.push(ms_between(sent, own.at));
        self.ids.push(Some(own.question_id.clone()));
        for (h, s) in seen.iter().enumerate() {
            if h != asker || seen.len() == 1 {
                self.notice.push(ms_between(sent, s.at));
            }
            if s.question_id != own.question_id {
                self.id_mismatches += 1;
                self.example(format!(
                    "ask {i}: host {h} shows {}, its asker {}",
                    s.question_id, own.question_id
                ));
            }
        }
    }

    /// Answers ask `i` (item `id`) on `host` and waits for its agent's
    /// result; the result, if one came.
    fn answer(
        &mut self,
        host: &Host,
        id: &str,
        i: usize,
        agent: &mut Peer,
    ) -> Result<Option<Value>, RoundError> {
        let stderr = host.sandbox.path("answer.stderr");
        let started = Instant::now();
        let mut child: Child = host
            .sandbox
            .hark(["answer", id, "--pick", label(i)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file(&stderr)?))
            .spawn()
            .map_err(RoundError::Answer)?;
        let response = match agent.response(CALL, ANSWER_PATIENCE) {
            Ok((at, message)) => {
                let ms = at.saturating_duration_since(started).as_secs_f64() * 1e3;
                self.answer_to_result.push(ms);
                Some(message)
            }
            Err(e) => {
                self.example(format!("ask {i}: no result: {}", hark_harness::Report(&e)));
                None
            }
        };
        let status = hark_harness::process::wait_or_kill(&mut child, ANSWER_PATIENCE);
        self.answer_runs.push(started.elapsed().as_secs_f64() * 1e3);
        if !status.is_some_and(|s| s.success()) {
            self.answer_failures += 1;
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            self.example(format!(
                "hark answer {id} on {}: {status:?}: {}",
                host.name,
                said.trim()
            ));
        }
        Ok(response)
    }

    /// Counts each ask's results: exactly one, the answer given.
    fn tally(&mut self, responses: &[Vec<Value>]) {
        for (i, got) in responses.iter().enumerate() {
            let expected = json!({ "answers": { question(self.label, i): label(i) } }).to_string();
            match got.as_slice() {
                [] => self.lost += 1,
                [one] if is_expected(one, &expected) => self.correct += 1,
                [one] => {
                    self.wrong += 1;
                    self.example(format!("ask {i}: got {one}"));
                }
                more => {
                    self.duplicated += 1;
                    self.example(format!("ask {i}: {} results", more.len()));
                }
            }
        }
    }

    /// The answering daemon's `answered` line → the asking daemon's, per
    /// ask answered on another host than its own.
    fn relays(&mut self, hosts: &[&Host], from: &[usize]) {
        if hosts.len() < 2 {
            return;
        }
        let ids: HashSet<String> = self.ids.iter().flatten().cloned().collect();
        let answered: Vec<_> = hosts
            .iter()
            .zip(from)
            .map(|(h, &from)| {
                wait_keyed(h.log(), from, ANSWERED, "question_id", &ids, ASK_PATIENCE)
                    .unwrap_or_else(|_| find_keyed(h.log(), from, ANSWERED, "question_id", &ids))
            })
            .collect();
        for i in 0..self.asks {
            let (asker, answerer) = asker_answerer(i, hosts.len());
            let Some(id) = &self.ids[i] else { continue };
            match (answered[answerer].get(id), answered[asker].get(id)) {
                (Some(a), Some(b)) => self.relay.push(ms_between(a.at, b.at)),
                _ => self.example(format!("ask {i}: not logged answered on both its hosts")),
            }
        }
    }

    fn example(&mut self, example: String) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(example);
        }
    }
}

/// Spawns and initializes the asking agents, ask `i` on its asker's host.
fn start_agents(round: &str, hosts: &[&Host], asks: usize) -> Result<Vec<Peer>, RoundError> {
    let mut agents = Vec::with_capacity(asks);
    for i in 0..asks {
        let host = hosts[asker_answerer(i, hosts.len()).0];
        let mut command = host.sandbox.command("sh");
        command
            .args(["-c", AGENT_SHELL])
            .arg(host.sandbox.bin("hark"))
            .env("HARK_SESSION_ID", session(round, i))
            .stderr(Stdio::from(log_file(&agent_log(round, hosts, i))?));
        agents.push(Peer::spawn(&mut command).map_err(|e| agent_error(round, hosts, i, e))?);
    }
    for (i, agent) in agents.iter_mut().enumerate() {
        agent
            .initialize(1, ASK_PATIENCE)
            .map_err(|e| agent_error(round, hosts, i, e))?;
    }
    Ok(agents)
}

fn agent_log(round: &str, hosts: &[&Host], i: usize) -> std::path::PathBuf {
    let host = hosts[asker_answerer(i, hosts.len()).0];
    host.sandbox.path(format!("{}.stderr", session(round, i)))
}

fn agent_error(round: &str, hosts: &[&Host], ask: usize, source: RpcError) -> RoundError {
    RoundError::Agent {
        ask,
        stderr: Tail::of_file("its", &agent_log(round, hosts, ask)),
        source,
    }
}

/// A second result for a call would come now: reads every agent until the
/// [`LINGER`] window closes.
fn linger(agents: &mut [Peer], responses: &mut [Vec<Value>]) {
    let end = Instant::now() + LINGER;
    for (agent, got) in agents.iter_mut().zip(responses) {
        while let Ok(Some((_, message))) =
            agent.next_message(end.saturating_duration_since(Instant::now()))
        {
            let result = message.get("result").is_some() || message.get("error").is_some();
            if message.get("id") == Some(&json!(CALL)) && result {
                got.push(message);
            }
        }
    }
}

/// Closes every agent; whether all exited 0 with only JSON-RPC on stdout.
fn close(agents: Vec<Peer>, examples: &mut Vec<String>) -> bool {
    let mut clean = true;
    for (i, agent) in agents.into_iter().enumerate() {
        match agent.close(ANSWER_PATIENCE) {
            Ok(f) if f.status.success() && f.stdout_clean => {}
            Ok(f) => {
                clean = false;
                if examples.len() < EXAMPLES {
                    examples.push(format!("ask {i}'s agent: {} {:?}", f.status, f.bad_line));
                }
            }
            Err(e) => {
                clean = false;
                if examples.len() < EXAMPLES {
                    examples.push(format!("ask {i}'s agent: {}", hark_harness::Report(&e)));
                }
            }
        }
    }
    clean
}
