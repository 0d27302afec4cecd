//! `hark run --detach`: the operator's daemon starts the run and owns it.

use std::path::PathBuf;

use hark_core::bridge::options::{IntakeSource, RunOptions};
use hark_core::bridge::wire::{ClientFrame, DispatchRequest, Environment, ServerFrame};

use super::RunError;
use crate::commands::query::{query, refused};
use crate::exit::ExitStatus;

/// `hark run --detach`: the operator's daemon starts the run and owns it.
/// Prints the run id; `hark runs` follows it.
pub async fn run(options: RunOptions) -> ExitStatus {
    let request = match detached_request(options) {
        Ok(request) => request,
        Err(message) => {
            eprintln!("hark: {message}");
            return ExitStatus::Failure;
        }
    };
    match query(&ClientFrame::Dispatch { request }).await {
        Ok(ServerFrame::Dispatched(run)) => {
            println!("{}", run.run_id);
            eprintln!(
                "hark: run {} started by the operator's daemon; its output goes to {}\nhint: `hark runs` shows how it goes",
                run.run_id.short(),
                run.log.display()
            );
            ExitStatus::Success
        }
        Ok(other) => refused(other),
        Err(code) => code,
    }
}

/// The daemon's request for these options. Paths are made absolute: the
/// daemon runs elsewhere. The run's directory is this one unless named.
/// Every option is named: a new one does not compile until it is sent.
fn detached_request(options: RunOptions) -> Result<DispatchRequest, RunError> {
    let RunOptions {
        verb,
        cwd,
        session,
        timeout_secs,
        on_timeout,
        agent,
        agent_kind,
        wrap,
        read_only,
        no_confine,
        intake,
        answers,
        // What brought the run here.
        detach: _,
        // clap refuses it beside --detach.
        hub: _,
        words,
    } = options;
    if wrap {
        return Err(RunError::Usage(
            "--detach hands a prompt to the daemon; it cannot --wrap a command line",
        ));
    }
    if !answers.is_empty() {
        return Err(RunError::Usage(
            "--detach asks the intake through the operator; drop --answer",
        ));
    }
    if words.is_empty() {
        return Err(RunError::Usage(
            "say what to do: hark run --detach -- PROMPT…",
        ));
    }
    let here = std::env::current_dir().map_err(RunError::Cwd)?;
    let absolute = |path: PathBuf| {
        if path.is_absolute() {
            path
        } else {
            here.join(path)
        }
    };
    // The daemon is sent the intake itself: a file here may not be there.
    let intake = match intake {
        Some(IntakeSource::File(path)) => {
            let text = std::fs::read_to_string(&path).map_err(|source| RunError::ReadIntake {
                path: path.clone(),
                source,
            })?;
            Some(IntakeSource::Inline(serde_json::from_str(&text).map_err(
                |source| RunError::IntakeJson {
                    path: path.clone(),
                    source,
                },
            )?))
        }
        inline => inline,
    };
    // A bare command name is found on the PATH sent along; a path is made absolute.
    let agent = agent.map(|agent| {
        if agent.components().count() > 1 {
            absolute(agent)
        } else {
            agent
        }
    });
    Ok(DispatchRequest {
        options: RunOptions {
            verb,
            cwd: Some(absolute(cwd.unwrap_or_else(|| here.clone()))),
            session,
            timeout_secs,
            on_timeout,
            agent,
            agent_kind,
            wrap: false,
            read_only,
            no_confine,
            intake,
            answers: Vec::new(),
            detach: false,
            hub: None,
            words: vec![words.join(" ")],
        },
        // The run gets this shell's environment (its PATH, its API keys),
        // not the daemon's; a variable that is not UTF-8 cannot be sent.
        env: Some(Environment(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        )),
    })
}
