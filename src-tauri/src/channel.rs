//! The window process's pipes to the app: its standard input (what the app
//! says, [`ToWindow`]) and a duplicate of its standard output (what the
//! page asks, [`FromWindow`]), one JSON line a message. On Unix standard
//! output itself then goes to standard error, so nothing a library prints
//! can land in the channel.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use hark_core::bridge::window::{CallResult, FromWindow, ToWindow, line};
use serde_json::Value;
use tauri::ipc::{Invoke, InvokeBody, InvokeError};
use tauri::{AppHandle, Emitter, LogicalSize};
use tokio::sync::oneshot;

/// The way to the app, and the page's calls waiting for its answer.
pub struct Channel {
    out: Mutex<Box<dyn Write + Send>>,
    waiting: Mutex<Waiting>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("waiting", &self.waiting().calls.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    calls: HashMap<u64, oneshot::Sender<CallResult>>,
}

impl Channel {
    /// The channel over this process's standard input and output.
    pub fn to_the_app() -> Arc<Channel> {
        Arc::new(Channel {
            out: Mutex::new(app_output()),
            waiting: Mutex::default(),
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends one message to the app. A write that fails (the app gone)
    /// is left: the input's end ends this process.
    pub fn send(&self, message: &FromWindow) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{}", line(message)).and_then(|()| out.flush());
    }

    /// Passes the page's call to the app; the page's promise settles with
    /// the app's answer (or is rejected if the app goes first).
    pub fn forward(self: &Arc<Self>, invoke: Invoke) {
        let args = match invoke.message.payload() {
            InvokeBody::Json(args) => args.clone(),
            InvokeBody::Raw(_) => Value::Null,
        };
        let command = invoke.message.command().to_owned();
        tracing::debug!(command, "window process: the page calls");
        let (tx, rx) = oneshot::channel();
        let call = {
            let mut waiting = self.waiting();
            waiting.next += 1;
            let call = waiting.next;
            waiting.calls.insert(call, tx);
            call
        };
        self.send(&FromWindow::Call {
            call,
            command,
            args,
        });
        invoke.resolver.respond_async(async move {
            match rx.await {
                Ok(CallResult::Ok(value)) => Ok(value),
                Ok(CallResult::Error(error)) => Err(InvokeError(error)),
                Err(_) => Err(InvokeError(serde_json::json!({
                    "code": "unavailable",
                    "message": "the app is gone",
                }))),
            }
        });
    }

    /// Follows what the app says, on a thread of its own, until its end
    /// ends this process.
    pub fn follow(self: &Arc<Self>, app: AppHandle) {
        let this = self.clone();
        std::thread::spawn(move || {
            let mut shown = None;
            for text in std::io::stdin().lock().lines() {
                let Ok(text) = text else { break };
                match serde_json::from_str::<ToWindow>(&text) {
                    Ok(message) => this.take(&app, message, &mut shown),
                    Err(e) => tracing::warn!("the app said something unknown: {e}"),
                }
            }
            this.waiting().calls.clear();
            app.exit(0);
        });
    }

    fn take(
        &self,
        app: &AppHandle,
        message: ToWindow,
        shown: &mut Option<hark_core::bridge::views::View>,
    ) {
        match message {
            ToWindow::Show {
                view,
                title,
                width,
                height,
            } => {
                let changed = *shown != Some(view);
                *shown = Some(view);
                crate::show(app, view, &title, LogicalSize::new(width, height), changed);
            }
            ToWindow::Hide => crate::hide(app),
            ToWindow::Emit { event, payload } => {
                let _ = app.emit(&event, payload);
            }
            ToWindow::Reply { call, result } => {
                if let Some(tx) = self.waiting().calls.remove(&call) {
                    let _ = tx.send(result);
                }
            }
        }
    }
}

/// Where messages to the app go: a duplicate of standard output, with
/// standard output itself sent to standard error from now on.
#[cfg(unix)]
fn app_output() -> Box<dyn Write + Send> {
    use std::os::fd::AsFd;
    let stdout = std::io::stdout();
    // Close-on-exec: WebKit's processes, which this one starts, must not
    // hold the channel open after this process is gone.
    match rustix::io::fcntl_dupfd_cloexec(stdout.as_fd(), 3) {
        Ok(fd) => {
            let _ = rustix::stdio::dup2_stdout(std::io::stderr().as_fd());
            Box::new(std::fs::File::from(fd))
        }
        Err(_) => Box::new(stdout),
    }
}

#[cfg(not(unix))]
fn app_output() -> Box<dyn Write + Send> {
    Box::new(std::io::stdout())
}
