//! Latency: sequential asks, each one question with a unique text. For each,
//! from the moment its ask frame is written:
//!
//! - → `Notify` on the bus: the `time=` dbus-monitor stamped on the
//!   `Notify` call carrying the question's text;
//! - → `modal.shown`: the app's log event the modal triggers once it has
//!   drawn the item's options (its `timestamp`);
//!
//! and, to see where the time goes, → `operator.question.asked` (the core
//! has the item), → `window shown` (the modal was asked to show), →
//! `tray.updated` (the tray was rebuilt; the windows are told to redraw
//! right after) and → `notification shown` (the `Notify` call returned).
//!
//! Each item is then skipped with `hark skip`; before the next ask the
//! benchmark waits for its `settled` frame, the tray's return to zero, and
//! the app to go quiet (the windows redraw after a settle too, and an ask
//! landing in the middle of that redraw would be shown by it, sooner than an
//! ask reaching an idle app), so every ask meets an idle app.

use std::time::Duration;

use hark_harness::Event;
use hark_harness::clock::ms_between;
use hark_harness::monitor;

use crate::asker::AskerChild;
use crate::desktop::Desktop;
use crate::error::Error;
use crate::idle::{QUIET_PATIENCE, QUIET_PERCENT};
use crate::procs;

/// How long any one event may take before the run is a failure.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// The bounded wait of each latency ask (it is skipped long before).
const ASK_TIMEOUT_SECS: u64 = 120;

/// One ask's timings, in ms from the write of its ask frame.
#[derive(Debug, Clone, Default)]
pub struct AskTimes {
    pub asked_ms: f64,
    pub notify_ms: f64,
    pub window_ms: Option<f64>,
    /// The tray rebuilt for the new item: the app emits `inbox-changed`,
    /// which the modal redraws on, right after.
    pub tray_ms: f64,
    pub notification_logged_ms: f64,
    pub modal_ms: Option<f64>,
    /// `modal.shown`'s own `since_asked_ms` (from the item's creation).
    pub since_asked_ms: Option<f64>,
    /// Starting `hark skip` → the `settled` frame (not from the ask).
    pub settle_ms: f64,
}

#[derive(Debug, Default)]
pub struct Results {
    pub asks: Vec<AskTimes>,
    /// Items whose outcome was `skipped`, as it should be.
    pub skipped: usize,
    /// Why `modal.shown` was not measured, when it was not.
    pub modal_missing: Option<ModalMissing>,
    /// The app log's index as the last ask was skipped: its window's
    /// release comes after it.
    pub last_settle_from: usize,
}

/// The app logged no `modal.shown` for an ask: from then on it is looked
/// for, not waited for.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the app logged no `modal.shown` for ask {ask} within {PATIENCE:?} \
     (the modal calls the `shown` command once it has drawn an item: \
     is it registered in the app's invoke handler?)"
)]
pub struct ModalMissing {
    /// Which ask, from 1.
    pub ask: usize,
}

impl Results {
    pub fn column(&self, f: impl Fn(&AskTimes) -> Option<f64>) -> Vec<f64> {
        self.asks.iter().filter_map(f).collect()
    }
}

/// Asks `count` questions one after the other.
pub fn measure(desktop: &Desktop, ticks_per_s: u64, count: usize) -> Result<Results, Error> {
    let socket = desktop.sandbox().socket();
    let mut results = Results::default();
    for k in 1..=count {
        let text = format!("Benchmark question {k}?");
        let (monitor_from, log_from) = (desktop.monitor().len(), desktop.log.len());
        let mut ask = AskerChild::start(&socket, &text, ASK_TIMEOUT_SECS, PATIENCE)?;
        let id = ask.id.clone();
        let of_item = |v: &serde_json::Value| v["question_id"] == id.as_str();
        let sent = ask.sent;
        let since = |e: &Event| ms_between(sent, e.at());

        let (_, notify_at) =
            desktop
                .monitor()
                .wait(&format!("Notify carrying {text:?}"), PATIENCE, |lines| {
                    monitor::find_notify(lines, monitor_from, &text)
                })?;
        let asked = desktop.event(log_from, "operator.question.asked", PATIENCE, of_item)?;
        let logged = desktop.event(log_from, "notification shown", PATIENCE, of_item)?;
        let window = desktop
            .log
            .find_event(log_from, "window shown", |v| v["window"] == "modal");
        let modal = if results.modal_missing.is_none() {
            match desktop.event(log_from, "modal.shown", PATIENCE, of_item) {
                Ok(event) => Some(event),
                Err(e) if desktop.log.ended() => return Err(e.into()),
                Err(_) => {
                    results.modal_missing = Some(ModalMissing { ask: k });
                    None
                }
            }
        } else {
            desktop.log.find_event(log_from, "modal.shown", of_item)
        };

        let tray = desktop.event(log_from, "tray.updated", PATIENCE, |v| v["pending"] == 1)?;

        let settle_from = desktop.log.len();
        results.last_settle_from = settle_from;
        let skipping = std::time::SystemTime::now();
        // The operator skips: the asker is this process's child, and hark
        // lets an agent's ancestor act as the operator (as the terminal that
        // started it). Whether it worked is the ask's own outcome, below.
        let mut skip = desktop.sandbox().command(desktop.sandbox().bin("hark"));
        skip.args(["skip", &id]);
        let out = skip.output().map_err(Error::RunSkip)?;
        if !out.status.success() {
            return Err(Error::Skip {
                id,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        let outcome = ask.settled()?;
        let settled_at = std::time::SystemTime::now();
        if outcome == "skipped" {
            results.skipped += 1;
        }
        // The modal is hidden and the tray back to zero before the next ask,
        // and the windows are done redrawing.
        desktop.event(settle_from, "tray.updated", PATIENCE, |v| v["pending"] == 0)?;
        procs::wait_quiet(desktop.app_pid, ticks_per_s, QUIET_PERCENT, QUIET_PATIENCE);

        results.asks.push(AskTimes {
            asked_ms: since(&asked),
            notify_ms: ms_between(sent, notify_at),
            window_ms: window.as_ref().map(since),
            tray_ms: since(&tray),
            notification_logged_ms: since(&logged),
            modal_ms: modal.as_ref().map(since),
            since_asked_ms: modal
                .as_ref()
                .and_then(|m| m.value["since_asked_ms"].as_f64()),
            settle_ms: ms_between(skipping, settled_at),
        });
    }
    Ok(results)
}
