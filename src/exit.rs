//! How a command ends: one [`ExitStatus`], turned into the process's exit
//! code in one place.

use std::process::ExitCode;

/// What a command's exit code says. Scripts branch on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Done: answered, listed, replied (0).
    Success,
    /// hark could not do it: a socket, a file, the store (1).
    Failure,
    /// The input or the reply was refused: malformed questions, an item
    /// that is not pending, a reply of the wrong shape (2).
    Refused,
    /// Nobody answered: no operator is attached, the item was skipped or
    /// timed out, the intake went unanswered (3).
    NotAnswered,
    /// The agent's own exit status (`hark run` exits with it).
    Agent(i32),
}

impl ExitStatus {
    /// The number the process exits with (and a run's record keeps).
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Refused => 2,
            ExitStatus::NotAnswered => 3,
            ExitStatus::Agent(code) => code,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(u8::try_from(status.code()).unwrap_or(1))
    }
}
