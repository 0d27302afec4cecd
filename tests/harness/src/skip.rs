//! A test that cannot run on this machine (no real agent CLI installed, no
//! permission to mount a disk) says `SKIPPED` and passes, where a person
//! runs the tests; in CI, or under the test command, it fails instead, so
//! that a run never passes by not running.

/// Set to `1` by `scripts/test`: every test must run (`0` lets a test
/// skip even in CI).
pub const REQUIRE_ALL_TESTS: &str = "HARK_REQUIRE_ALL_TESTS";

/// Whether every test must run: as `HARK_REQUIRE_ALL_TESTS` says when it
/// is set, else when `CI` is (every CI service sets it).
pub fn all_tests_required() -> bool {
    let set = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    };
    set(REQUIRE_ALL_TESTS)
        .or_else(|| set("CI"))
        .unwrap_or(false)
}

/// The test cannot run here, for `why`: says `SKIPPED: why` on stderr and
/// lets it pass, or fails it when every test must run.
pub fn skip(why: &str) {
    assert!(
        !all_tests_required(),
        "this test cannot run here: {why}; in CI and under scripts/test every test must run \
         ({REQUIRE_ALL_TESTS}=0 lets it skip)"
    );
    eprintln!("SKIPPED: {why}");
}
