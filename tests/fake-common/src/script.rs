//! The script a fake follows: its prompt, one command a line (`ASK {json}`,
//! `SAY text`, `WRITE path text`, `EXIT n`, `HANG`), standing in for what
//! the model would do. `fake-claude` has more commands and follows its own
//! loop (it stops and resumes mid-script), with [`split`] and
//! [`exit_status`]; the others follow [`follow`].

use std::future::Future;

use serde_json::Value;

/// A line's command word and the rest (`""` when there is none).
pub fn split(line: &str) -> (&str, &str) {
    line.trim().split_once(' ').unwrap_or((line.trim(), ""))
}

/// The status `EXIT n` sets (1 when `n` is not one).
pub fn exit_status(rest: &str) -> u8 {
    rest.trim().parse().unwrap_or(1)
}

/// What a fake does for each command of its script.
pub trait Agent {
    /// `ASK {json}`: the model's call of the operator's `ask`.
    fn ask(&mut self, input: Value) -> impl Future<Output = ()>;
    /// `SAY text`: the model's text; also how a bad `ASK` line is told.
    fn say(&mut self, text: &str);
    /// `WRITE path text`: the model writes a file (through its CLI's tool).
    fn write(&mut self, path: &str, text: &str);
    /// `EXIT n`: the status the run ends with.
    fn exit(&mut self, status: u8);
    /// Any other line (none blank): passed over unless the fake says.
    fn other(&mut self, _line: &str) {}
    /// Whether the turn has ended before the script has (no more lines).
    fn ended(&self) -> bool {
        false
    }
}

/// Follows `script`, a command a line; `HANG` waits until the process is
/// killed. Whether it went through every line (`false`: [`Agent::ended`]
/// cut it before one).
pub async fn follow(agent: &mut impl Agent, script: &str) -> bool {
    for line in script.lines() {
        if agent.ended() {
            return false;
        }
        match split(line) {
            ("", _) => {}
            ("ASK", rest) => match serde_json::from_str::<Value>(rest) {
                Ok(input) => agent.ask(input).await,
                Err(e) => agent.say(&format!("bad ASK: {e}")),
            },
            ("SAY", rest) => agent.say(rest),
            ("WRITE", rest) => {
                let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
                agent.write(path, text);
            }
            ("EXIT", rest) => agent.exit(exit_status(rest)),
            ("HANG", _) => std::future::pending::<()>().await,
            _ => agent.other(line),
        }
    }
    true
}
