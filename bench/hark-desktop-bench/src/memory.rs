//! Memory: the resident set of the app's whole process tree with 1 item
//! pending, then with `pending` items pending (every connection held open,
//! as waiting agents hold theirs), then after they are all cancelled. Each
//! point is sampled as soon as the app shows it (the modal drew the first
//! item; the tray counts them all and every notification is up), and again
//! once the app has gone quiet.

use std::time::Duration;

use crate::asker::Ask;
use crate::desktop::Desktop;
use crate::error::Error;
use crate::idle::{QUIET_PATIENCE, QUIET_PERCENT, RELEASE_PATIENCE};
use crate::latency::PATIENCE;
use crate::procs::{self, TreeSample};
use crate::smaps::Breakdown;

/// The bounded wait of the items held pending: longer than any run.
const HOLD_SECS: u64 = 3600;

/// How many times the window is released and shown again: each first
/// modal after a release is one sample of a figure the machine's moment
/// swings by a hundred milliseconds.
pub const RELEASES: usize = 5;

/// What the window process started ahead logs once it waits, its pages
/// given back (`hark-window`'s `dormant`).
const WAITING_AHEAD: &str = "window process: waiting to be needed";

/// What the app logs once it has settled into idle after a release, its
/// own pages given back (`hark-app`'s `resident`).
const GIVEN_BACK: &str = "idle: pages given back";

/// The tree sampled at one point, as soon as the app showed it and once quiet.
#[derive(Debug, Clone)]
pub struct Point {
    pub pending: usize,
    pub shown: TreeSample,
    pub quiet: TreeSample,
    /// How long it took to get quiet; `None` if it never did (sampled anyway).
    pub quiet_after: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct Results {
    pub one: Point,
    pub many: Point,
    /// After every item was cancelled (the connections closed) and the
    /// window released: the idle footprint.
    pub after: Point,
    /// What the first point waited for.
    pub one_waited_for: &'static str,
    /// Where hark-app's memory is at `after`, by mapping.
    pub after_breakdown: Breakdown,
    /// Ask → `modal.shown` for the first ask after each release of the
    /// window (the window, and WebKit's processes, built again), ms.
    pub modal_after_release_ms: Vec<f64>,
}

impl Results {
    /// The median of [`Results::modal_after_release_ms`].
    pub fn modal_after_release_median_ms(&self) -> f64 {
        let mut sorted = self.modal_after_release_ms.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn point(desktop: &Desktop, ticks_per_s: u64, pending: usize) -> Point {
    let shown = TreeSample::take(desktop.app_pid);
    let quiet_after =
        procs::wait_quiet(desktop.app_pid, ticks_per_s, QUIET_PERCENT, QUIET_PATIENCE);
    Point {
        pending,
        shown,
        quiet: TreeSample::take(desktop.app_pid),
        quiet_after,
    }
}

/// Matches a log event of the item `id`.
fn of(id: &str) -> impl Fn(&serde_json::Value) -> bool + use<> {
    let id = id.to_owned();
    move |v: &serde_json::Value| v["question_id"] == id.as_str()
}

/// hark-app's memory by mapping once the app is quiet.
pub fn settled_breakdown(desktop: &Desktop, ticks_per_s: u64) -> Breakdown {
    procs::wait_quiet(desktop.app_pid, ticks_per_s, QUIET_PERCENT, QUIET_PATIENCE);
    Breakdown::of(desktop.app_pid)
}

/// Runs the three points. `modal_logs` says whether the app logs
/// `modal.shown` (else the first point waits for the tray and the window).
pub fn measure(
    desktop: &Desktop,
    ticks_per_s: u64,
    pending: usize,
    modal_logs: bool,
) -> Result<Results, Error> {
    let socket = desktop.sandbox().socket();
    let from = desktop.log.len();
    let first = Ask::start(&socket, "Pending item 1?", HOLD_SECS, PATIENCE)?;
    let one_waited_for = if modal_logs {
        desktop.event(from, "modal.shown", PATIENCE, of(&first.id))?;
        "modal.shown"
    } else {
        desktop.event(from, "tray.updated", PATIENCE, |v| v["pending"] == 1)?;
        desktop.event(from, "window shown", PATIENCE, |v| v["window"] == "modal")?;
        "tray.updated (1 pending) and window shown"
    };
    desktop.event(from, "notification shown", PATIENCE, of(&first.id))?;
    let one = point(desktop, ticks_per_s, 1);

    let from = desktop.log.len();
    let mut held = vec![first];
    for k in 2..=pending {
        held.push(Ask::start(
            &socket,
            &format!("Pending item {k}?"),
            HOLD_SECS,
            PATIENCE,
        )?);
    }
    desktop.event(from, "tray.updated", PATIENCE, |v| v["pending"] == pending)?;
    for ask in &held[1..] {
        desktop.event(from, "notification shown", PATIENCE, of(&ask.id))?;
    }
    let many = point(desktop, ticks_per_s, pending);

    let from = desktop.log.len();
    drop(held);
    desktop.event(from, "tray.updated", PATIENCE, |v| v["pending"] == 0)?;
    // Nothing pending and the window gone: the app as it idles all day.
    let released = desktop.event(from, "window released", PATIENCE, |_| true)?;
    let after = point(desktop, ticks_per_s, 0);
    let after_breakdown = Breakdown::of(desktop.app_pid);
    let modal_after_release_ms = after_releases(desktop, &socket, released.index)?;
    Ok(Results {
        one,
        many,
        after,
        after_breakdown,
        one_waited_for,
        modal_after_release_ms,
    })
}

/// Ask → `modal.shown` for the first ask after each of [`RELEASES`]
/// releases of the window (the window built again, and WebKit's processes
/// started, by the process waiting ahead), ms. Each ask waits until that
/// process waits and the app has settled (both their pages given back), as
/// a question coming after an idle minute finds them; the first follows
/// the release at log line `released`.
fn after_releases(
    desktop: &Desktop,
    socket: &std::path::Path,
    mut released: usize,
) -> Result<Vec<f64>, Error> {
    let mut samples = Vec::with_capacity(RELEASES);
    for round in 0..RELEASES {
        desktop.event(released, WAITING_AHEAD, PATIENCE, |_| true)?;
        desktop.event(released, GIVEN_BACK, PATIENCE, |_| true)?;
        let from = desktop.log.len();
        let woken = Ask::start(socket, "After a release?", HOLD_SECS, PATIENCE)?;
        let shown = desktop.event(from, "modal.shown", PATIENCE, of(&woken.id))?;
        samples.push(
            shown
                .at()
                .duration_since(woken.sent)
                .unwrap_or_default()
                .as_secs_f64()
                * 1000.0,
        );
        drop(woken);
        desktop.event(from, "tray.updated", PATIENCE, |v| v["pending"] == 0)?;
        if round + 1 < RELEASES {
            released = desktop
                .event(from, "window released", RELEASE_PATIENCE, |_| true)?
                .index;
        }
    }
    Ok(samples)
}
