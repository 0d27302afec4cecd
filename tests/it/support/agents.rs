//! What the tests of the real agent CLIs share: finding the CLI (the
//! version `tests/agents` pins, which `scripts/setup --tests` installs, or
//! one a variable names), a mock of its model API (a Python script under
//! `bench/`, killed when dropped), and waiting on what they do.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The real CLI `bin` (`claude`, `opencode`, `gemini`): the one `var`
/// names, else the installed one; without either, `None`, said as SKIPPED
/// (a failure in CI and under the test command: `hark_harness::skip`).
pub fn real_agent(bin: &str, var: &str) -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agents/node_modules/.bin")
        .join(bin);
    let found = std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| installed.exists().then_some(installed));
    if found.is_none() {
        hark_harness::skip(&format!(
            "no {bin} (scripts/setup --tests installs it; or {var})"
        ));
    }
    found
}

/// Polls `probe` until it gives something, for `patience` at most: for
/// what announces itself by no event (a file a mock writes, a terminal's
/// screen).
pub fn until<T>(what: &str, patience: Duration, probe: impl FnMut() -> Option<T>) -> T {
    until_showing(what, patience, probe, String::new)
}

/// [`until`], saying what `shown` shows when it times out.
pub fn until_showing<T>(
    what: &str,
    patience: Duration,
    mut probe: impl FnMut() -> Option<T>,
    shown: impl Fn() -> String,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            start.elapsed() < patience,
            "timed out waiting for {what}{}",
            shown()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A mock model API, `bench/SCRIPT` run with `args`; it logs every request
/// to `log` and is killed when dropped.
pub struct MockApi {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl MockApi {
    /// Starts it with its log and port file in `dir`, and waits for its port.
    pub fn start(script: &str, dir: &Path, args: &[&str]) -> MockApi {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("bench")
            .join(script);
        let (port_file, log) = (dir.join("mock.port"), dir.join("mock.log"));
        let child = Command::new("python3")
            .arg(script)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs the mock");
        let port = until("the mock's port", Duration::from_secs(60), || {
            std::fs::read_to_string(&port_file)
                .ok()?
                .trim()
                .parse()
                .ok()
        });
        MockApi { child, port, log }
    }

    /// Every request's body, in order.
    pub fn bodies(&self) -> Vec<Value> {
        super::invocations(&self.log)
            .into_iter()
            .map(|r| r["body"].clone())
            .collect()
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
