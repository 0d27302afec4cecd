//! A real browser at a phone's size: Debian's headless Chromium, driven
//! through `chromedriver` (WebDriver, with fantoccini), emulating a phone
//! (390×844 CSS pixels at 3×, touch, a phone's user agent). Each browser
//! has a fresh profile (no cookies, no cache) in a temp dir of its own;
//! Chromium's background traffic (updates, sync, field trials, QUIC) is
//! turned off, since these machines are on a closed network.
//!
//! Taps are WebDriver touch actions (a finger down and up on the element),
//! not mouse clicks, so the page meets what a phone sends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fantoccini::actions::{InputSource, PointerAction, TouchActions};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::lines::{Lines, WaitError};
use crate::process::{self, EXIT_PATIENCE, ProcessError, Started};
use crate::sandbox::Sandbox;

/// Where Debian's packages put them (`chromium`, `chromium-driver`).
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The phone emulated: a 6.1" phone's viewport in CSS pixels.
pub const PHONE_WIDTH: u32 = 390;
pub const PHONE_HEIGHT: u32 = 844;
const PHONE_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 \
     (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36";

/// How long chromedriver may take to listen, and the browser to start.
const START_PATIENCE: Duration = Duration::from_secs(30);

/// Why the browser did not come up, or a step in it failed.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("{} is not installed: run ./scripts/setup --tests, which installs chromium and chromium-driver", .0.display())]
    Missing(PathBuf),
    #[error("cannot find a free loopback port")]
    Port(#[source] std::io::Error),
    #[error("cannot create the browser's profile dir")]
    Profile(#[source] std::io::Error),
    #[error(transparent)]
    Start(#[from] ProcessError),
    #[error("chromedriver has no stdout pipe")]
    NoStdout,
    /// chromedriver never said it listens.
    #[error(transparent)]
    NotListening(#[from] WaitError),
    #[error("no WebDriver session with headless Chromium")]
    Session(#[source] fantoccini::error::NewSessionError),
    #[error("WebDriver: {what}")]
    Command {
        what: String,
        #[source]
        source: fantoccini::error::CmdError,
    },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("axe-core returned what is not a list of violations: {0}")]
    Audit(Value),
}

/// `what` failed in the browser.
fn command(what: impl Into<String>) -> impl FnOnce(fantoccini::error::CmdError) -> BrowserError {
    let what = what.into();
    move |source| BrowserError::Command { what, source }
}

/// Headless Chromium, emulating a phone, under chromedriver.
#[derive(Debug)]
pub struct Browser {
    pub client: Client,
    /// chromedriver's output (it says where it listens, and what failed).
    pub log: Lines,
    driver: Started,
    profile: tempfile::TempDir,
}

/// A free port on the loopback interface (bound, then let go for
/// chromedriver to take).
fn free_port() -> Result<u16, BrowserError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(BrowserError::Port)?;
    Ok(listener.local_addr().map_err(BrowserError::Port)?.port())
}

impl Browser {
    /// Starts chromedriver on a free loopback port (in `sandbox`'s
    /// environment) and a session with headless Chromium as a phone.
    pub async fn phone(sandbox: &Sandbox) -> Result<Browser, BrowserError> {
        for tool in [CHROMIUM, CHROMEDRIVER] {
            if !Path::new(tool).exists() {
                return Err(BrowserError::Missing(tool.into()));
            }
        }
        let profile = tempfile::Builder::new()
            .prefix("chromium-profile-")
            .tempdir_in(sandbox.root())
            .map_err(BrowserError::Profile)?;
        let port = free_port()?;
        let mut driver = Started::spawn(
            "chromedriver",
            sandbox
                .command(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )?;
        let stdout = driver.child.stdout.take().ok_or(BrowserError::NoStdout)?;
        let log = Lines::follow("chromedriver", stdout);
        log.wait("chromedriver listening", START_PATIENCE, |lines| {
            lines
                .iter()
                .any(|l| l.text.contains("started successfully"))
                .then_some(())
        })?;
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-default-apps",
                    "--disable-extensions",
                    "--metrics-recording-only",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
                "mobileEmulation": {
                    "deviceMetrics": {
                        "width": PHONE_WIDTH,
                        "height": PHONE_HEIGHT,
                        "pixelRatio": 3.0,
                        "touch": true,
                    },
                    "userAgent": PHONE_UA,
                },
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        let client = ClientBuilder::native()
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .map_err(BrowserError::Session)?;
        Ok(Browser {
            client,
            log,
            driver,
            profile,
        })
    }

    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.client
            .goto(url)
            .await
            .map_err(command(format!("go to {url}")))
    }

    /// Waits up to `patience` for the element matching `xpath`.
    pub async fn wait_for(&self, xpath: &str, patience: Duration) -> Result<Element, BrowserError> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let found = self
                .client
                .wait()
                .at_most(left)
                .for_element(Locator::XPath(xpath))
                .await;
            // chromedriver answers a find that a navigation of the page
            // (the pair page's, once paired) interrupts with this, not with
            // "no such element": the wait goes on, on the next page.
            match found {
                Err(e)
                    if e.to_string().contains("aborted by navigation")
                        && std::time::Instant::now() < deadline => {}
                found => return found.map_err(command(format!("wait for {xpath}"))),
            }
        }
    }

    /// Taps `element` with a finger: scrolled into the middle of the
    /// screen, then a touch down and up at its centre.
    pub async fn tap(&self, element: &Element) -> Result<(), BrowserError> {
        self.client
            .execute(
                "arguments[0].scrollIntoView({block: 'center', inline: 'nearest'});",
                vec![json!(element)],
            )
            .await
            .map_err(command("scroll to the element"))?;
        let finger = TouchActions::new("finger".to_owned())
            .then(PointerAction::MoveToElement {
                element: element.clone(),
                duration: None,
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Down { button: 0 })
            .then(PointerAction::Up { button: 0 });
        self.client
            .perform_actions(finger)
            .await
            .map_err(command("tap"))
    }

    /// Runs axe-core (the script at `axe`) on the page as it is; the
    /// serious and critical violations, as `rule (impact): targets` lines.
    pub async fn audit(&self, axe: &Path) -> Result<Vec<String>, BrowserError> {
        let source = std::fs::read_to_string(axe).map_err(|source| BrowserError::Read {
            path: axe.to_owned(),
            source,
        })?;
        self.client
            .execute(&source, vec![])
            .await
            .map_err(command("load axe-core"))?;
        let found = self
            .client
            .execute_async(
                "const done = arguments[0];
                 axe.run(document, {resultTypes: ['violations']}).then(
                   (r) => done(r.violations
                     .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                     .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)),
                   (e) => done([`axe failed: ${e}`]));",
                vec![],
            )
            .await
            .map_err(command("run axe-core"))?;
        serde_json::from_value(found.clone()).map_err(|_| BrowserError::Audit(found))
    }

    /// The viewport as a PNG, once what the page shows has been painted
    /// (two animation frames).
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        self.client
            .execute_async(
                "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                vec![],
            )
            .await
            .map_err(command("wait for a paint"))?;
        self.client
            .screenshot()
            .await
            .map_err(command("screenshot"))
    }

    /// Ends the WebDriver session (chromedriver closes Chromium), then
    /// chromedriver.
    pub async fn stop(mut self) {
        let close = self.client.clone().close();
        let _ = tokio::time::timeout(Duration::from_secs(10), close).await;
        self.driver.stop();
        self.reap_chromium();
    }

    /// Stops any Chromium still running on this browser's profile (a test
    /// that failed half-way never closed its session): by pid, found by
    /// the profile dir on its command line, which is this browser's alone.
    fn reap_chromium(&self) {
        let flag = format!("--user-data-dir={}", self.profile.path().display());
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        let ours: Vec<u32> = dir
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == flag.as_bytes())
                    .then_some(pid)
            })
            .collect();
        for pid in &ours {
            let _ = process::terminate(*pid);
        }
        process::wait_gone(&ours, EXIT_PATIENCE);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.driver.stop();
        self.reap_chromium();
    }
}
