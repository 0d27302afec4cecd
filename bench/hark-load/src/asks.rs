//! The asks made while the abuse is held: many with a short timeout, which
//! should each come back timed out, on time; and one the scripted operator
//! answers at once, whose round trip is the latency an agent would see.

use std::path::Path;
use std::time::{Duration, Instant};

use hark_core::bridge::client::{Call, ClientError};
use hark_core::bridge::wire::{Caller, ClientFrame};
use hark_core::model::item::Outcome;
use serde_json::json;

/// The question the scripted operator answers at once.
pub const ANSWERED: &str = "Is the daemon still answering?";
/// The question it never answers.
const UNANSWERED: &str = "Will this one time out?";

/// How the short asks fared.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeouts {
    pub sent: usize,
    /// Settled `timed_out` no sooner than their timeout.
    pub timed_out: usize,
    /// Settled some other way.
    pub other: usize,
    /// Refused, or the connection failed.
    pub failed: usize,
    /// The latest a timed-out ask heard of it, seconds after it was sent.
    pub slowest_secs: f64,
}

fn ask(question: &str, timeout_secs: f64) -> ClientFrame {
    ClientFrame::Ask {
        caller: Caller {
            session_id: Some("hark-load".into()),
            timeout_secs: Some(timeout_secs),
            ..Caller::default()
        },
        request: json!({"questions": [{
            "question": question, "header": "Load", "multiSelect": false,
            "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}],
        }]}),
    }
}

/// `count` asks at once, each with `timeout` to be answered (none is).
pub async fn timeouts(socket: &Path, count: usize, timeout: Duration) -> Timeouts {
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..count {
        let socket = socket.to_owned();
        calls.spawn(async move {
            let sent = Instant::now();
            let mut call = Call::start(&socket, &ask(UNANSWERED, timeout.as_secs_f64())).await?;
            let outcome = call.outcome().await?;
            Ok::<_, ClientError>((outcome, sent.elapsed()))
        });
    }
    let mut tally = Timeouts {
        sent: count,
        ..Timeouts::default()
    };
    while let Some(done) = calls.join_next().await {
        match done {
            Ok(Ok((Outcome::TimedOut { .. }, after))) if after >= timeout => {
                tally.timed_out += 1;
                tally.slowest_secs = tally.slowest_secs.max(after.as_secs_f64());
            }
            Ok(Ok(_)) => tally.other += 1,
            _ => tally.failed += 1,
        }
    }
    tally
}

/// Why the answered ask was not.
#[derive(Debug, thiserror::Error)]
pub enum NotAnswered {
    #[error("the ask failed")]
    Failed(#[from] ClientError),
    #[error("the ask settled {0}, not answered")]
    Settled(&'static str),
}

/// One ask the operator answers at once: its round trip.
pub async fn answered(socket: &Path) -> Result<Duration, NotAnswered> {
    let sent = Instant::now();
    let mut call = Call::start(socket, &ask(ANSWERED, 60.0)).await?;
    match call.outcome().await? {
        Outcome::Answered(_) => Ok(sent.elapsed()),
        other => Err(NotAnswered::Settled(other.name())),
    }
}
