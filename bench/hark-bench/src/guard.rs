//! `--guard RATIO`: the test command's regression guard on the agent's
//! server's cold start (issue 41). Not the target (`bench/run` reports
//! that): it fails only when the server is clearly slower than a bare rmcp
//! one, on a machine that may be busy. Each round is the cold start's
//! interleaved runs (the two servers alternate, so load hits both), judged
//! on medians; up to [`ROUNDS`] rounds, and the best one counts: load can
//! make a round worse, not a slow start fast.

use crate::cold::{self, ColdError, Subject};
use hark_harness::Sandbox;

/// Rounds before the guard gives up.
pub const ROUNDS: usize = 3;

/// Runs up to [`ROUNDS`] rounds of `runs` interleaved cold starts each;
/// `Ok(true)` as soon as one round's worse median ratio (to `initialize`,
/// to `tools/list`) is at most `limit`.
pub fn run(
    sandbox: &Sandbox,
    server: &Subject,
    bare: &Subject,
    runs: usize,
    limit: f64,
) -> Result<bool, ColdError> {
    println!(
        "cold-start guard: {} against {}, {runs} interleaved runs a round, medians, pass at ≤ {limit}x",
        server.label, bare.label
    );
    let mut best = f64::INFINITY;
    for round in 1..=ROUNDS {
        let (s, b) = cold::measure(sandbox, server, bare, runs)?;
        let ratio = |s: Option<hark_bench::stats::Summary>,
                     b: Option<hark_bench::stats::Summary>| {
            match (s, b) {
                (Some(s), Some(b)) if b.p50 > 0.0 => s.p50 / b.p50,
                _ => f64::INFINITY,
            }
        };
        let init = ratio(s.initialize(), b.initialize());
        let list = ratio(s.tools_list(), b.tools_list());
        let median = |r: Option<hark_bench::stats::Summary>| r.map_or(f64::NAN, |r| r.p50);
        println!(
            "  round {round}: initialize {:.2} ms / {:.2} ms = {init:.2}x, tools/list {:.2} ms / {:.2} ms = {list:.2}x",
            median(s.initialize()),
            median(b.initialize()),
            median(s.tools_list()),
            median(b.tools_list()),
        );
        if !(s.stdout_clean && b.stdout_clean) {
            println!("  FAIL: a server wrote something other than JSON-RPC on stdout");
            return Ok(false);
        }
        best = best.min(init.max(list));
        if best <= limit {
            println!("  PASS: {best:.2}x ≤ {limit}x");
            return Ok(true);
        }
    }
    println!(
        "  FAIL: the cold start is {best:.2}x a bare rmcp server's at best over {ROUNDS} rounds (guard {limit}x); \
         see bench/results/cold-start.md for how to find where it goes"
    );
    Ok(false)
}
