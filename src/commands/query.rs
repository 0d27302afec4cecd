//! Talking to the running app or `hark serve` from a command: one frame
//! out, one answer back, and how a failure is told (with its exit status).

use std::path::PathBuf;

use hark_core::bridge::client::{self, ClientError};
use hark_core::bridge::socket;
use hark_core::bridge::wire::{ClientFrame, ErrorCode, ServerFrame};
use hark_core::model::validate::describe;

use crate::exit::ExitStatus;

pub fn socket_path() -> Result<PathBuf, ExitStatus> {
    socket::app_socket_path().map_err(|e| {
        eprintln!("hark: {e}");
        ExitStatus::Failure
    })
}

pub fn unreachable(e: &ClientError) -> ExitStatus {
    eprintln!("hark: {e}");
    if matches!(e, ClientError::Unreachable { .. }) {
        eprintln!("hint: start `hark app` (desktop) or `hark serve --prompter terminal`");
        ExitStatus::NotAnswered
    } else {
        ExitStatus::Failure
    }
}

/// Sends one frame to the operator service and takes its answer, or says
/// why it could not and gives the exit code.
pub async fn query(frame: &ClientFrame) -> Result<ServerFrame, ExitStatus> {
    let socket = socket_path()?;
    client::request(&socket, frame)
        .await
        .map_err(|e| unreachable(&e))
}

pub fn print_json<T: serde::Serialize>(rows: &[T]) -> ExitStatus {
    println!("{}", serde_json::to_string(rows).unwrap_or_default());
    ExitStatus::Success
}

pub fn refused(frame: ServerFrame) -> ExitStatus {
    match frame {
        ServerFrame::Error(e) => {
            eprintln!("hark: {}", e.message);
            if !e.issues.is_empty() {
                eprintln!("{}", describe(&e.issues));
            }
            match e.code {
                ErrorCode::NotPending
                | ErrorCode::NotFound
                | ErrorCode::HumanReplyMismatch
                | ErrorCode::Invalid
                | ErrorCode::InsideAgent => ExitStatus::Refused,
                _ => ExitStatus::Failure,
            }
        }
        other => {
            eprintln!("hark: unexpected answer from the operator service: {other:?}");
            ExitStatus::Failure
        }
    }
}
