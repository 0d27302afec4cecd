//! The app's promises, and whether this run kept them.

use serde_json::{Value, json};

use hark_bench::stats::round3;

use crate::Measured;
use crate::procs::{TreeSample, mb};

/// Ask → `Notify` on the bus, median, ms.
const TARGET_NOTIFY_MS: f64 = 50.0;
/// Ask → the modal showing the options, median, ms.
const TARGET_MODAL_MS: f64 = 300.0;
/// Ask → the modal, the first after the window was released, median of
/// the run's releases, ms (issue 41).
const TARGET_MODAL_AFTER_RELEASE_MS: f64 = 150.0;
/// Idle CPU of the whole app, % of one core.
const TARGET_IDLE_PERCENT: f64 = 1.0;
/// Resident memory of the whole app with the window shown, MB (10^6 bytes).
const TARGET_RSS_MB: f64 = 240.0;
/// The whole app with nothing pending and no window (before any, and
/// after it was released), MB (issue 41).
const TARGET_IDLE_RSS_MB: f64 = 45.0;
/// What the asks may leave behind once the window is released: idle after
/// them against idle before any question, MB.
const TARGET_IDLE_GROWTH_MB: f64 = 5.0;
/// "Flat" as pending items grow: memory growth from 1 to many pending, %.
const TARGET_GROWTH_PERCENT: f64 = 10.0;

/// The figures the targets judge, and the verdicts.
#[derive(Debug)]
pub struct Targets {
    /// How the whole app's memory was counted: `each page once` where the
    /// page frames could be read, else `sum of RSS`.
    measure: &'static str,
    /// The most the whole app held at any memory point, MB.
    peak_rss: f64,
    /// From 1 to many pending, as soon as shown.
    pub growth_mb: f64,
    pub growth_pct: f64,
    /// From 1 to many pending, once quiet.
    pub quiet_growth_mb: f64,
    pub quiet_growth_pct: f64,
    /// After every item settled and the window went, once quiet.
    idle_rss: f64,
    /// Before any question (no window yet), once quiet.
    fresh_rss: f64,
    /// Ask → modal for the first ask after the window went.
    modal_after_idle_ok: bool,
    notify_ok: bool,
    modal_ok: bool,
    idle_ok: bool,
    rss_ok: bool,
    idle_rss_ok: bool,
    fresh_rss_ok: bool,
    idle_growth_ok: bool,
    flat_ok: bool,
}

impl Targets {
    pub fn of(m: &Measured) -> Targets {
        let mem = &m.mem;
        let resident = |s: &TreeSample| mb(s.resident_kib());
        let one_rss = resident(&mem.one.shown);
        let many_rss = resident(&mem.many.shown);
        let peak_rss = [
            &mem.one.shown,
            &mem.one.quiet,
            &mem.many.shown,
            &mem.many.quiet,
        ]
        .iter()
        .map(|s| resident(s))
        .fold(0.0, f64::max);
        let growth_mb = many_rss - one_rss;
        let growth_pct = growth_mb / one_rss * 100.0;
        let quiet_growth_mb = resident(&mem.many.quiet) - resident(&mem.one.quiet);
        let quiet_growth_pct = quiet_growth_mb / resident(&mem.one.quiet) * 100.0;
        let idle_rss = resident(&mem.after.quiet);
        let fresh_rss = resident(&m.fresh);
        Targets {
            measure: if mem.one.shown.unique_kib.is_some() {
                "each page once"
            } else {
                "sum of RSS"
            },
            peak_rss,
            growth_mb,
            growth_pct,
            quiet_growth_mb,
            quiet_growth_pct,
            idle_rss,
            fresh_rss,
            modal_after_idle_ok: mem.modal_after_release_median_ms()
                <= TARGET_MODAL_AFTER_RELEASE_MS,
            notify_ok: m.notify.p50 <= TARGET_NOTIFY_MS,
            modal_ok: m.modal.is_some_and(|m| m.p50 <= TARGET_MODAL_MS),
            idle_ok: m.idle.percent <= TARGET_IDLE_PERCENT,
            rss_ok: peak_rss <= TARGET_RSS_MB,
            idle_rss_ok: idle_rss <= TARGET_IDLE_RSS_MB,
            fresh_rss_ok: fresh_rss <= TARGET_IDLE_RSS_MB,
            idle_growth_ok: idle_rss - fresh_rss <= TARGET_IDLE_GROWTH_MB,
            flat_ok: growth_pct <= TARGET_GROWTH_PERCENT,
        }
    }

    /// The `targets` table, PASS or MISS each.
    pub fn print(&self, m: &Measured, pending: usize) {
        println!("targets");
        let target = |what: String, value: String, ok: bool| {
            println!("  {what:<58} {value:>12}  {}", pass(ok));
        };
        target(
            format!("ask → Notify on the bus, median ≤ {TARGET_NOTIFY_MS} ms"),
            format!("{:.1} ms", m.notify.p50),
            self.notify_ok,
        );
        target(
            format!("ask → modal showing the options, median ≤ {TARGET_MODAL_MS} ms"),
            m.modal
                .map_or("not logged".into(), |m| format!("{:.1} ms", m.p50)),
            self.modal_ok,
        );
        target(
            format!(
                "idle CPU over {:.0} s, whole app, ≤ {TARGET_IDLE_PERCENT} % of one core",
                m.idle.secs
            ),
            format!("{:.3} %", m.idle.percent),
            self.idle_ok,
        );
        target(
            format!(
                "memory of the whole app ({}; 1 and {pending} pending) ≤ {TARGET_RSS_MB} MB",
                self.measure
            ),
            format!("{:.1} MB", self.peak_rss),
            self.rss_ok,
        );
        target(
            format!(
                "ask → modal, the first ask after the window went, median of {}, ≤ {TARGET_MODAL_AFTER_RELEASE_MS} ms",
                m.mem.modal_after_release_ms.len()
            ),
            format!(
                "{:.1} ms ({})",
                m.mem.modal_after_release_median_ms(),
                m.mem
                    .modal_after_release_ms
                    .iter()
                    .map(|ms| format!("{ms:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            self.modal_after_idle_ok,
        );
        target(
            format!(
                "memory before any question, no window ({}) ≤ {TARGET_IDLE_RSS_MB} MB",
                self.measure
            ),
            format!("{:.1} MB", self.fresh_rss),
            self.fresh_rss_ok,
        );
        target(
            format!(
                "memory, nothing pending, window released ({}) ≤ {TARGET_IDLE_RSS_MB} MB",
                self.measure
            ),
            format!("{:.1} MB", self.idle_rss),
            self.idle_rss_ok,
        );
        target(
            format!("  of it left by the asks, against before any (≤ {TARGET_IDLE_GROWTH_MB} MB)"),
            format!("{:+.1} MB", self.idle_rss - self.fresh_rss),
            self.idle_growth_ok,
        );
        target(
            format!("memory flat from 1 to {pending} pending (growth ≤ {TARGET_GROWTH_PERCENT} %)"),
            format!("{:+.1} %", self.growth_pct),
            self.flat_ok,
        );
    }

    /// The final JSON line's `targets`.
    pub fn to_json(&self, m: &Measured) -> Value {
        json!({
            "ask_to_notify_median_ms_max": { "target": TARGET_NOTIFY_MS, "value": round3(m.notify.p50), "pass": self.notify_ok },
            "ask_to_modal_median_ms_max": { "target": TARGET_MODAL_MS, "value": m.modal.map(|m| round3(m.p50)), "pass": self.modal_ok },
            "idle_cpu_percent_max": { "target": TARGET_IDLE_PERCENT, "value": round3(m.idle.percent), "pass": self.idle_ok },
            "memory_mb_max": { "measure": self.measure, "target": TARGET_RSS_MB, "value": round3(self.peak_rss), "pass": self.rss_ok },
            "modal_after_idle_ms_max": { "target": TARGET_MODAL_AFTER_RELEASE_MS, "value": round3(m.mem.modal_after_release_median_ms()), "samples": m.mem.modal_after_release_ms.iter().map(|ms| round3(*ms)).collect::<Vec<_>>(), "pass": self.modal_after_idle_ok },
            "idle_memory_mb_max": { "measure": self.measure, "target": TARGET_IDLE_RSS_MB, "value": round3(self.idle_rss), "pass": self.idle_rss_ok },
            "fresh_idle_memory_mb_max": { "measure": self.measure, "target": TARGET_IDLE_RSS_MB, "value": round3(self.fresh_rss), "pass": self.fresh_rss_ok },
            "idle_growth_mb_max": { "measure": self.measure, "target": TARGET_IDLE_GROWTH_MB, "value": round3(self.idle_rss - self.fresh_rss), "pass": self.idle_growth_ok },
            "memory_growth_percent_max": { "target": TARGET_GROWTH_PERCENT, "value": round3(self.growth_pct), "pass": self.flat_ok },
        })
    }
}

fn pass(b: bool) -> &'static str {
    if b { "PASS" } else { "MISS" }
}
