//! An agent's side of the app socket, raw: one JSON line
//! `{"type":"ask",…}` out, `accepted` back, later `settled`. Closing the
//! connection cancels the item.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

/// What went wrong asking, or waiting for the item to settle.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("cannot connect to {}", socket.display())]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set the connection's read timeout")]
    ReadTimeout(#[source] std::io::Error),
    #[error("cannot encode the ask")]
    Encode(#[source] serde_json::Error),
    #[error("cannot send the ask")]
    Send(#[source] std::io::Error),
    #[error("the ask was not accepted: {frame}")]
    NotAccepted { frame: Value },
    #[error("`accepted` without an id: {frame}")]
    NoId { frame: Value },
    #[error("expected `settled` for {id}, got {frame}")]
    NotSettled { id: String, frame: Value },
    #[error("the app closed the connection before `{what}`")]
    Closed { what: &'static str },
    #[error("a bad frame {line:?}")]
    BadFrame {
        line: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot start the asker process")]
    Spawn(#[source] std::io::Error),
    #[error("the asker process said {line:?}")]
    AskerSaid { line: String },
    #[error("no `{what}` frame")]
    NoFrame {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// The session every benchmark item is filed under.
pub const SESSION: &str = "desktop-bench";

/// One asked item, its connection held open.
#[derive(Debug)]
pub struct Ask {
    pub id: String,
    /// When the ask frame was written (just before).
    pub sent: SystemTime,
    reader: BufReader<UnixStream>,
}

/// A one-question request with two options, as AskUserQuestion sends it.
pub fn request(text: &str) -> Value {
    json!({
        "questions": [{
            "question": text,
            "header": "Benchmark",
            "multiSelect": false,
            "options": [
                { "label": "Yes", "description": "go ahead" },
                { "label": "No", "description": "do not" }
            ]
        }]
    })
}

impl Ask {
    /// Connects, writes the ask frame and reads `accepted`.
    pub fn start(
        socket: &Path,
        text: &str,
        timeout_secs: u64,
        patience: Duration,
    ) -> Result<Ask, AskError> {
        let stream = UnixStream::connect(socket).map_err(|source| AskError::Connect {
            socket: socket.to_owned(),
            source,
        })?;
        stream
            .set_read_timeout(Some(patience))
            .map_err(AskError::ReadTimeout)?;
        let mut frame = serde_json::to_vec(&json!({
            "type": "ask",
            "session_id": SESSION,
            "request": request(text),
            "timeout_secs": timeout_secs,
        }))
        .map_err(AskError::Encode)?;
        frame.push(b'\n');
        let mut writer = &stream;
        let sent = SystemTime::now();
        writer.write_all(&frame).map_err(AskError::Send)?;
        let mut reader = BufReader::new(stream);
        let accepted = read_frame(&mut reader, "accepted")?;
        if accepted["type"] != "accepted" {
            return Err(AskError::NotAccepted { frame: accepted });
        }
        let Some(id) = accepted["id"].as_str().map(str::to_owned) else {
            return Err(AskError::NoId { frame: accepted });
        };
        Ok(Ask { id, sent, reader })
    }

    /// Waits for the `settled` frame; returns its outcome's name.
    pub fn settled(&mut self) -> Result<String, AskError> {
        let frame = read_frame(&mut self.reader, "settled")?;
        if frame["type"] != "settled" || frame["id"] != self.id.as_str() {
            return Err(AskError::NotSettled {
                id: self.id.clone(),
                frame,
            });
        }
        Ok(frame["outcome"]["outcome"]
            .as_str()
            .unwrap_or("?")
            .to_owned())
    }
}

fn read_frame(reader: &mut BufReader<UnixStream>, what: &'static str) -> Result<Value, AskError> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => Err(AskError::Closed { what }),
        Ok(_) => serde_json::from_str(&line).map_err(|source| AskError::BadFrame { line, source }),
        Err(source) => Err(AskError::NoFrame { what, source }),
    }
}

/// An ask held by a process of its own, a child of the bench: the bench is
/// then the asker's ancestor, which hark lets act as the operator (as the
/// terminal that started an agent may), rather than the asker itself, which
/// it refuses. The child is this program again, as [`ASKER_ROLE`].
#[derive(Debug)]
pub struct AskerChild {
    pub id: String,
    /// When the child wrote the ask frame.
    pub sent: SystemTime,
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

/// The first argument that makes this program the asker of [`AskerChild`]:
/// `--asker SOCKET TIMEOUT_SECS PATIENCE_MS TEXT`.
pub const ASKER_ROLE: &str = "--asker";

impl AskerChild {
    /// Starts the child and reads the id and sending time of its ask.
    pub fn start(
        socket: &Path,
        text: &str,
        timeout_secs: u64,
        patience: Duration,
    ) -> Result<AskerChild, AskError> {
        let exe = std::env::current_exe().map_err(AskError::Spawn)?;
        let mut child = std::process::Command::new(exe)
            .arg(ASKER_ROLE)
            .arg(socket)
            .arg(timeout_secs.to_string())
            .arg(patience.as_millis().to_string())
            .arg(text)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(AskError::Spawn)?;
        let stdout = child
            .stdout
            .take()
            .ok_or(AskError::Closed { what: "accepted" })?;
        let mut asker = AskerChild {
            id: String::new(),
            sent: SystemTime::UNIX_EPOCH,
            child,
            lines: BufReader::new(stdout),
        };
        let said = asker.next("accepted")?;
        let (Some(id), Some(sent_us)) = (said["id"].as_str(), said["sent_us"].as_u64()) else {
            return Err(AskError::AskerSaid {
                line: said.to_string(),
            });
        };
        asker.id = id.to_owned();
        asker.sent = SystemTime::UNIX_EPOCH + Duration::from_micros(sent_us);
        Ok(asker)
    }

    /// Waits for the item to settle; returns its outcome's name.
    pub fn settled(&mut self) -> Result<String, AskError> {
        let said = self.next("settled")?;
        let _ = self.child.wait();
        match said["outcome"].as_str() {
            Some(outcome) => Ok(outcome.to_owned()),
            None => Err(AskError::AskerSaid {
                line: said.to_string(),
            }),
        }
    }

    fn next(&mut self, what: &'static str) -> Result<Value, AskError> {
        let mut line = String::new();
        match self.lines.read_line(&mut line) {
            Ok(0) => Err(AskError::Closed { what }),
            Ok(_) => {
                serde_json::from_str(&line).map_err(|source| AskError::BadFrame { line, source })
            }
            Err(source) => Err(AskError::NoFrame { what, source }),
        }
    }
}

/// The child's side of [`AskerChild`]: asks, prints `{"id","sent_us"}`,
/// waits, prints `{"outcome"}` (or `{"error"}`); whether it got that far.
pub fn serve_as_child(args: &[String]) -> bool {
    let [socket, timeout, patience, text] = args else {
        println!(
            "{}",
            json!({"error": "usage: --asker SOCKET TIMEOUT_SECS PATIENCE_MS TEXT"})
        );
        return false;
    };
    let timeout = timeout.parse().unwrap_or(600);
    let patience = Duration::from_millis(patience.parse().unwrap_or(20_000));
    let said = Ask::start(Path::new(socket), text, timeout, patience).and_then(|mut ask| {
        let sent_us = ask
            .sent
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        println!("{}", json!({"id": ask.id, "sent_us": sent_us}));
        ask.settled()
    });
    match said {
        Ok(outcome) => {
            println!("{}", json!({"outcome": outcome}));
            true
        }
        Err(e) => {
            println!("{}", json!({"error": e.to_string()}));
            false
        }
    }
}
