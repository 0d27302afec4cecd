//! Property tests of the parts of the core that take input from outside:
//! the frame reader (any bytes a peer sends), the ask validator (any JSON an
//! agent sends) and the answer resolver (any picks a surface hands it).
//!
//! The default case counts keep the whole file to a few seconds in the
//! normal `cargo test`. For a long run, set the count for every property:
//!
//! ```text
//! PROPTEST_CASES=100000 cargo test -p hark-core --test props --release
//! ```
//!
//! (The properties that feed the reader frames of a MiB each run a hundredth
//! of that count.) A failure is shrunk to a minimal case and saved under
//! `proptest-regressions/`, which is committed so it is tried first ever after.
//!
//! - `frames`: `read_frame` over arbitrary bytes cut into arbitrary reads,
//!   frames at the cap, and frames round-tripping through `write_frame`.
//! - `asks`: `validate` over arbitrary JSON and over mutated valid asks.
//! - `answers`: `resolve` over valid asks and arbitrary picks.
//! - `strategies`: arbitrary JSON, valid asks, and their mutations.

mod answers;
mod asks;
mod frames;
mod strategies;

use proptest::test_runner::Config;

/// `default` cases, or `PROPTEST_CASES` divided by `divisor` when it is set.
pub fn cases(default: u32, divisor: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
        .map_or(default, |c| (c / divisor).max(1));
    Config::with_cases(cases)
}
