//! `hark ask`: a script asks the operator directly.
//!
//! Prints one JSON object on stdout, `{"outcome":…}` with the answers when
//! answered, and exits 0 answered, 2 invalid input, 3 not answered.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{AskError, Call};
use crate::config::Config;
use crate::item::{Asker, Outcome};
use crate::socket;
use crate::validate::{describe, validate};
use crate::wire::{Caller, ClientFrame};

pub const EXIT_ANSWERED: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_INVALID: i32 = 2;
pub const EXIT_NOT_ANSWERED: i32 = 3;

/// How often `hark ask` looks for an operator that is not up yet.
const ATTACH_RETRY: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct AskOptions {
    /// The questions file (`-` for stdin): `{"questions":[…]}`.
    pub file: PathBuf,
    /// The bounded wait; the config's when `None`.
    pub timeout: Option<Duration>,
    /// Return `not_answered` at once when no operator is attached, instead
    /// of waiting (up to the timeout) for one to start.
    pub no_wait: bool,
    pub session_id: Option<String>,
}

fn read_input(path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

fn print(value: Value) {
    println!("{value}");
}

/// Runs `hark ask`; returns the exit code.
pub async fn run(options: AskOptions) -> i32 {
    let config = match Config::load() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("hark: {e}");
            return EXIT_FAILED;
        }
    };
    let request: Value = match read_input(&options.file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("not JSON: {e}")))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hark: cannot read {}: {e}", options.file.display());
            print(json!({"outcome": "invalid", "issues": [{"path": "", "message": e}]}));
            return EXIT_INVALID;
        }
    };
    if let Err(issues) = validate(&request, config.rules()) {
        eprintln!("hark: the questions are malformed:\n{}", describe(&issues));
        print(json!({"outcome": "invalid", "issues": issues}));
        return EXIT_INVALID;
    }
    let socket = match socket::app_socket_path() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("hark: {e}");
            return EXIT_FAILED;
        }
    };
    let timeout = options.timeout.unwrap_or_else(|| config.ask_timeout());
    let frame = ClientFrame::Ask {
        caller: Caller {
            session_id: Some(
                options
                    .session_id
                    .unwrap_or_else(|| format!("hark-ask-{}", std::process::id())),
            ),
            run_id: None,
            asker: Asker::this_process("hark ask"),
            timeout_secs: Some(timeout.as_secs_f64()),
        },
        request,
    };
    let give_up = tokio::time::Instant::now() + timeout;
    let mut retry = tokio::time::interval(ATTACH_RETRY);
    let mut hinted = false;
    let mut call = loop {
        match Call::start(&socket, &frame).await {
            Ok(call) => break call,
            Err(AskError::Unreachable { .. })
                if !options.no_wait && tokio::time::Instant::now() < give_up =>
            {
                if !hinted {
                    eprintln!(
                        "hark: no operator is attached yet; waiting for `hark app` or `hark serve` (up to {} s)",
                        timeout.as_secs()
                    );
                    hinted = true;
                }
                retry.tick().await;
            }
            Err(AskError::Unreachable { .. }) => {
                print(json!({"outcome": "not_answered", "reason": "no operator is attached"}));
                eprintln!("hint: start `hark app` (desktop) or `hark serve --prompter terminal`");
                return EXIT_NOT_ANSWERED;
            }
            Err(AskError::Refused(refusal)) if !refusal.issues.is_empty() => {
                eprintln!(
                    "hark: the questions are malformed:\n{}",
                    describe(&refusal.issues)
                );
                print(json!({"outcome": "invalid", "issues": refusal.issues}));
                return EXIT_INVALID;
            }
            Err(e) => {
                eprintln!("hark: {e}");
                return EXIT_FAILED;
            }
        }
    };
    let outcome = tokio::select! {
        outcome = call.outcome() => outcome,
        _ = tokio::signal::ctrl_c() => {
            let _ = call.cancel().await;
            call.outcome().await
        }
    };
    match outcome {
        Ok(outcome) => {
            print(serde_json::to_value(&outcome).unwrap_or(Value::Null));
            if let Some(message) = outcome.unanswered_message() {
                eprintln!("hark: {message}");
                EXIT_NOT_ANSWERED
            } else if matches!(outcome, Outcome::Answered(_)) {
                EXIT_ANSWERED
            } else {
                EXIT_NOT_ANSWERED
            }
        }
        Err(e) => {
            eprintln!("hark: {e}");
            EXIT_FAILED
        }
    }
}
