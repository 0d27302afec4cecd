//! An agent's side of the app socket, raw: one JSON line
//! `{"type":"ask",…}` out, `accepted` back, later `settled`. Closing the
//! connection cancels the item.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

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
    ) -> Result<Ask, String> {
        let stream = UnixStream::connect(socket)
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        stream
            .set_read_timeout(Some(patience))
            .map_err(|e| e.to_string())?;
        let mut frame = serde_json::to_vec(&json!({
            "type": "ask",
            "session_id": SESSION,
            "request": request(text),
            "timeout_secs": timeout_secs,
        }))
        .map_err(|e| e.to_string())?;
        frame.push(b'\n');
        let mut writer = &stream;
        let sent = SystemTime::now();
        writer
            .write_all(&frame)
            .map_err(|e| format!("cannot send the ask: {e}"))?;
        let mut reader = BufReader::new(stream);
        let accepted = read_frame(&mut reader, "accepted")?;
        if accepted["type"] != "accepted" {
            return Err(format!("the ask was not accepted: {accepted}"));
        }
        let id = accepted["id"]
            .as_str()
            .ok_or_else(|| format!("`accepted` without an id: {accepted}"))?
            .to_owned();
        Ok(Ask { id, sent, reader })
    }

    /// Waits for the `settled` frame; returns its outcome's name.
    pub fn settled(&mut self) -> Result<String, String> {
        let frame = read_frame(&mut self.reader, "settled")?;
        if frame["type"] != "settled" || frame["id"] != self.id.as_str() {
            return Err(format!("expected `settled` for {}, got {frame}", self.id));
        }
        Ok(frame["outcome"]["outcome"]
            .as_str()
            .unwrap_or("?")
            .to_owned())
    }
}

fn read_frame(reader: &mut BufReader<UnixStream>, what: &str) -> Result<Value, String> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => Err(format!("the app closed the connection before `{what}`")),
        Ok(_) => serde_json::from_str(&line).map_err(|e| format!("a bad frame {line:?}: {e}")),
        Err(e) => Err(format!("no `{what}` frame: {e}")),
    }
}
