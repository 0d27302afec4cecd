//! `hark ask`: a script asks the operator directly.
//!
//! Prints one JSON object on stdout, `{"outcome":…}` with the answers when
//! answered, and exits 0 answered, 2 invalid input, 3 not answered.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use hark_core::bridge::client::{Call, ClientError};
use hark_core::bridge::socket;
use hark_core::bridge::wire::{Caller, ClientFrame};
use hark_core::config::Config;
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Asker, Outcome};
use hark_core::model::validate::{describe, validate};

use crate::cli::AskArgs;
use crate::exit::ExitStatus;

/// How often `hark ask` looks for an operator that is not up yet.
const ATTACH_RETRY: Duration = Duration::from_millis(250);

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

/// Why the questions file gives no JSON.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The questions file, read and checked; an invalid one is reported as
/// `{"outcome":"invalid",…}`.
fn questions(file: &Path, config: &Config) -> Result<Value, ExitStatus> {
    let read = read_input(file)
        .map_err(Unreadable::from)
        .and_then(|t| Ok(serde_json::from_str(&t)?));
    let request: Value = match read {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hark: cannot read {}: {e}", file.display());
            let message = e.to_string();
            print(json!({"outcome": "invalid", "issues": [{"path": "", "message": message}]}));
            return Err(ExitStatus::Refused);
        }
    };
    if let Err(issues) = validate(&request, config.rules()) {
        eprintln!("hark: the questions are malformed:\n{}", describe(&issues));
        print(json!({"outcome": "invalid", "issues": issues}));
        return Err(ExitStatus::Refused);
    }
    Ok(request)
}

/// Runs `hark ask`.
pub async fn run(options: AskArgs) -> ExitStatus {
    let config = match Config::load() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("hark: {e}");
            return ExitStatus::Failure;
        }
    };
    let request = match questions(&options.file, &config) {
        Ok(request) => request,
        Err(status) => return status,
    };
    let socket = match socket::app_socket_path() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("hark: {e}");
            return ExitStatus::Failure;
        }
    };
    // The wait is sent only when it was given here: otherwise the daemon's
    // own (its --ask-timeout, else its config) applies. The config's is how
    // long to wait for an operator to start.
    let timeout = options.timeout.unwrap_or_else(|| config.ask_timeout());
    let frame = ClientFrame::Ask {
        caller: Caller {
            session_id: Some(SessionId::from(
                options
                    .session
                    .unwrap_or_else(|| format!("hark-ask-{}", std::process::id())),
            )),
            run_id: None,
            asker: Asker::this_process("hark ask"),
            timeout_secs: options.timeout.map(|t| t.as_secs_f64()),
            ..Caller::default()
        },
        request,
    };
    let give_up = tokio::time::Instant::now() + timeout;
    let mut retry = tokio::time::interval(ATTACH_RETRY);
    let mut hinted = false;
    let mut call = loop {
        match Call::start(&socket, &frame).await {
            Ok(call) => break call,
            Err(ClientError::Unreachable { .. })
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
            Err(ClientError::Unreachable { .. }) => {
                print(json!({"outcome": "not_answered", "reason": "no operator is attached"}));
                eprintln!("hint: start `hark app` (desktop) or `hark serve --prompter terminal`");
                return ExitStatus::NotAnswered;
            }
            Err(ClientError::Refused(refusal)) if !refusal.issues.is_empty() => {
                eprintln!(
                    "hark: the questions are malformed:\n{}",
                    describe(&refusal.issues)
                );
                print(json!({"outcome": "invalid", "issues": refusal.issues}));
                return ExitStatus::Refused;
            }
            Err(e) => {
                eprintln!("hark: {e}");
                return ExitStatus::Failure;
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
                ExitStatus::NotAnswered
            } else if matches!(outcome, Outcome::Answered(_)) {
                ExitStatus::Success
            } else {
                ExitStatus::NotAnswered
            }
        }
        Err(e) => {
            eprintln!("hark: {e}");
            ExitStatus::Failure
        }
    }
}
