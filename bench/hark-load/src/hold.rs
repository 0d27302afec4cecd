//! `hark-load hold`: the abusive client, run as a child process so that each
//! crowd counts against the daemon's per-process limit on its own. It
//! connects `count` times, sends what its mode says, prints `ready`, then
//! watches what the daemon does with each connection and prints a [`Tally`]
//! as one JSON line.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hark_core::bridge::wire::read_frame;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// What each connection of a crowd sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Half a first frame, then nothing.
    Half,
    /// A whole `subscribe` frame, then half of another, then nothing.
    SubscribedHalf,
    /// Nothing at all.
    Idle,
}

#[derive(Debug, clap::Args)]
pub struct HoldArgs {
    #[arg(long)]
    pub socket: PathBuf,
    #[arg(long)]
    pub count: usize,
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// Seconds to watch for the daemon to drop each connection.
    #[arg(long, default_value_t = 30)]
    pub patience: u64,
}

/// How a crowd fared.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub connected: usize,
    pub connect_failed: usize,
    /// Turned away at once by the per-process limit.
    pub refused: usize,
    /// Served, then dropped by the daemon (at a deadline).
    pub dropped: usize,
    /// The soonest and latest drop, seconds after the connection's last write.
    pub drop_secs: (f64, f64),
    /// Still open when the patience ran out.
    pub open: usize,
}

impl Tally {
    pub fn to_json(self) -> Value {
        json!({"connected": self.connected, "connect_failed": self.connect_failed,
            "refused": self.refused, "dropped": self.dropped, "drop_min": self.drop_secs.0,
            "drop_max": self.drop_secs.1, "open": self.open})
    }

    pub fn from_json(v: &Value) -> Tally {
        let n = |k: &str| v[k].as_u64().unwrap_or(0) as usize;
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        Tally {
            connected: n("connected"),
            connect_failed: n("connect_failed"),
            refused: n("refused"),
            dropped: n("dropped"),
            drop_secs: (f("drop_min"), f("drop_max")),
            open: n("open"),
        }
    }

    /// Two crowds' tallies as one.
    pub fn add(self, other: Tally) -> Tally {
        let drop_secs = match (self.dropped, other.dropped) {
            (0, _) => other.drop_secs,
            (_, 0) => self.drop_secs,
            _ => (
                self.drop_secs.0.min(other.drop_secs.0),
                self.drop_secs.1.max(other.drop_secs.1),
            ),
        };
        Tally {
            connected: self.connected + other.connected,
            connect_failed: self.connect_failed + other.connect_failed,
            refused: self.refused + other.refused,
            dropped: self.dropped + other.dropped,
            drop_secs,
            open: self.open + other.open,
        }
    }
}

/// What the daemon did with one connection.
enum Fate {
    Refused,
    Dropped(Duration),
    Open,
}

/// Connects, retrying while the listen queue is full.
async fn connect(socket: &Path) -> std::io::Result<UnixStream> {
    let mut tries = 0;
    loop {
        match UnixStream::connect(socket).await {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && tries < 2000 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            other => return other,
        }
    }
}

/// Reads until the daemon hangs up or `patience` runs out.
async fn watch(stream: UnixStream, sent: Instant, patience: Duration) -> Fate {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    let mut refused = false;
    let until_closed = async {
        while let Ok(true) = read_frame(&mut reader, &mut buf).await {
            let frame: Value = serde_json::from_slice(&buf).unwrap_or_default();
            refused |= frame["code"] == "unavailable";
        }
    };
    match tokio::time::timeout(patience, until_closed).await {
        Err(_) => Fate::Open,
        Ok(()) if refused => Fate::Refused,
        Ok(()) => Fate::Dropped(sent.elapsed()),
    }
}

pub async fn hold(args: HoldArgs) -> Tally {
    let mut tally = Tally::default();
    let mut watching = tokio::task::JoinSet::new();
    let what: &[u8] = match args.mode {
        Mode::Half => b"{\"type\":\"ask\",\"request\":{\"questions\":[",
        Mode::SubscribedHalf => b"{\"type\":\"subscribe\"}\n{\"type\":\"can",
        Mode::Idle => b"",
    };
    let patience = Duration::from_secs(args.patience);
    for _ in 0..args.count {
        let Ok(mut stream) = connect(&args.socket).await else {
            tally.connect_failed += 1;
            continue;
        };
        if stream.write_all(what).await.is_err() {
            tally.connect_failed += 1;
            continue;
        }
        tally.connected += 1;
        watching.spawn(watch(stream, Instant::now(), patience));
    }
    println!("ready");
    let mut drops = Vec::new();
    while let Some(fate) = watching.join_next().await {
        match fate {
            Ok(Fate::Refused) => tally.refused += 1,
            Ok(Fate::Dropped(after)) => drops.push(after.as_secs_f64()),
            Ok(Fate::Open) | Err(_) => tally.open += 1,
        }
    }
    tally.dropped = drops.len();
    tally.drop_secs = drops
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &d| (lo.min(d), hi.max(d)));
    if drops.is_empty() {
        tally.drop_secs = (0.0, 0.0);
    }
    tally
}
