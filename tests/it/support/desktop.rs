//! Drives the real desktop app the way a person would, on a headless X
//! display (run the tests under `xvfb-run`): each test gets the harness's
//! private session (a D-Bus session bus with a real notification server,
//! dunst, and a `dbus-monitor` watching it), a tray host when it clicks the
//! tray, and the app started by `tauri-driver` + `WebKitWebDriver`, driven
//! through WebDriver (fantoccini).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hark_harness::desktop::installed;
use hark_harness::process::{self, EXIT_PATIENCE, Started};
use hark_harness::{Lines, PATIENCE, Sandbox, Session, TrayHost};
use serde_json::{Value, json};

use super::{bin_dir, sandbox};

/// One desktop at a time: the tests share an X display and two cores.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub const ENTER: &str = "\u{e007}";
pub const ESCAPE: &str = "\u{e00c}";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Desktop {
    /// The test's sandbox, on the session's bus: the app's socket, store
    /// and config, and what the test runs besides the app.
    pub sandbox: Sandbox,
    /// Kept until the desktop drops; declared before the session, so it
    /// stops first.
    _tray_host: Option<TrayHost>,
    session: Session,
    /// What crossed the bus to the notification server.
    pub notifications: Lines,
    driver: Started,
    /// The app's log (JSON lines), which reaches us through tauri-driver.
    pub log: Lines,
    pub client: Client,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Desktop {
    pub async fn start() -> Desktop {
        Desktop::start_with(&[], false).await
    }

    /// Starts a private session, a tray host when `tray`, and the app;
    /// `env` is added to the app's environment.
    pub async fn start_with(env: &[(&str, &str)], tray: bool) -> Desktop {
        Desktop::launch(env, tray, None).await
    }

    /// Starts the app with this config file.
    pub async fn start_configured(config: &str) -> Desktop {
        Desktop::launch(&[], false, Some(config)).await
    }

    async fn launch(env: &[(&str, &str)], tray: bool, config: Option<&str>) -> Desktop {
        let turn = ONE_AT_A_TIME.lock().await;
        assert!(
            std::env::var_os("DISPLAY").is_some(),
            "the desktop tests need an X display: run them under xvfb-run (see scripts/test)"
        );
        let tools = ["tauri-driver", "WebKitWebDriver"];
        for tool in hark_harness::desktop::TOOLS.into_iter().chain(tools) {
            assert!(
                installed(tool),
                "{tool} is not installed: run the tests with ./scripts/test, which installs it"
            );
        }
        let app = bin_dir().join("hark-app");
        assert!(
            app.exists(),
            "{} is missing: run `cargo build -p hark-app` first",
            app.display()
        );
        let session =
            Session::start(&sandbox()).unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        let sandbox = session.sandbox.clone();
        if let Some(config) = config {
            std::fs::write(sandbox.config(), config).unwrap();
        }
        let tray_host = tray.then(|| {
            TrayHost::start(&session, PATIENCE)
                .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)))
        });
        let (port, native) = (free_port(), free_port());
        let mut driver = sandbox.command("tauri-driver");
        driver
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("HARK_LOG_FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            driver.env(k, v);
        }
        let mut driver = Started::spawn("tauri-driver", &mut driver)
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        let log = Lines::follow(
            "the app, through tauri-driver",
            driver.child.stderr.take().unwrap(),
        );
        let _stdout = Lines::follow("tauri-driver", driver.child.stdout.take().unwrap());
        let capabilities = json!({
            "browserName": "wry",
            "tauri:options": {"application": app},
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let url = format!("http://127.0.0.1:{port}");
        let client = {
            // tauri-driver announces nothing when it listens: knock until it answers.
            let deadline = std::time::Instant::now() + PATIENCE;
            let mut knock = tokio::time::interval(Duration::from_millis(50));
            loop {
                knock.tick().await;
                match ClientBuilder::native()
                    .capabilities(capabilities.clone())
                    .connect(&url)
                    .await
                {
                    Ok(client) => break client,
                    Err(e) => assert!(
                        std::time::Instant::now() < deadline,
                        "no WebDriver session: {e}"
                    ),
                }
            }
        };
        log.wait_event("hark is serving the operator", &[]);
        Desktop {
            sandbox,
            _tray_host: tray_host,
            notifications: session.monitor.clone(),
            session,
            driver,
            log,
            client,
            _turn: turn,
        }
    }

    /// Waits until the app's one window shows `#view` (`modal` or `inbox`).
    pub async fn view(&self, view: &str) {
        let windows = self.client.windows().await.unwrap();
        assert_eq!(windows.len(), 1, "the app has one window");
        self.client
            .switch_to_window(windows[0].clone())
            .await
            .unwrap();
        self.wait_for(&format!("//main[@id='{view}' and not(@hidden)]"))
            .await;
    }

    /// Waits until the element matching `xpath` exists.
    pub async fn wait_for(&self, xpath: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::XPath(xpath))
            .await
            .unwrap_or_else(|e| panic!("never appeared: {xpath}: {e}"))
    }

    /// Waits until the modal shows this question.
    pub async fn wait_for_question(&self, text: &str) {
        self.wait_for(&format!(
            "//*[@id='question-text' and normalize-space(.)=normalize-space({})]",
            xpath_literal(text)
        ))
        .await;
    }

    pub async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Sends keys to whatever has focus in the current window.
    pub async fn keys(&self, keys: &str) {
        self.client
            .active_element()
            .await
            .unwrap()
            .send_keys(keys)
            .await
            .unwrap();
    }

    /// Clicks the option with this label.
    pub async fn pick(&self, label: &str) {
        let xpath = format!(
            "//input[@name='choice' and @value={}]",
            xpath_literal(label)
        );
        self.client
            .find(Locator::XPath(&xpath))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    /// Replaces the text of the field matching `css` with `text`.
    /// Shows a section of the inbox (`waiting`, `history`, `sessions`,
    /// `runs`, `new-run`) by its tab.
    pub async fn section(&self, name: &str) {
        self.click(&format!("#tab-{name}")).await;
        self.wait_for(&format!("//section[@id='panel-{name}' and not(@hidden)]"))
            .await;
    }

    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    /// Waits for a `Notify` call on the bus whose arguments carry `text`;
    /// returns the call's lines.
    pub fn wait_for_notify(&self, text: &str) -> Vec<String> {
        self.notifications
            .wait_until(&format!("Notify with {text:?}"), |lines| {
                lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.text.contains("member=Notify"))
                    .find_map(|(at, _)| {
                        let call: Vec<String> = lines[at + 1..]
                            .iter()
                            .map(|l| l.text.clone())
                            .take_while(|l| !l.starts_with("method") && !l.starts_with("signal"))
                            .collect();
                        // Whole once its last argument (the expiry, an int32
                        // at the top level) is printed: the actions come after
                        // the body and may not have arrived yet.
                        let whole = call.iter().any(|l| l.starts_with("   int32 "));
                        (whole && call.iter().any(|l| l.contains(text))).then_some(call)
                    })
            })
    }

    /// Clicks a notification's action (`default` is its body) as the
    /// operator does: in the notification server, which tells the app.
    pub fn click_action(&self, notification_id: u64, action: &str) {
        self.session
            .choose_action(notification_id, action)
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    }

    /// The session bus's address, for a test that speaks on it itself.
    pub fn bus_address(&self) -> &str {
        &self.session.address
    }

    /// The unique bus name of the app's connection to the notification
    /// server (the sender of its first `Notify`).
    pub fn notifying_connection(&self) -> String {
        self.notifications
            .wait_until("the app's Notify call", |lines| {
                let call = lines.iter().find(|l| l.text.contains("member=Notify"))?;
                let sender = call
                    .text
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("sender="))?;
                Some(sender.to_owned())
            })
    }

    /// Waits for the app to close notification `id` (a `CloseNotification`
    /// call on the bus).
    pub fn wait_for_close(&self, notification_id: u64) {
        let id = format!("uint32 {notification_id}");
        self.notifications
            .wait_until(&format!("CloseNotification({notification_id})"), |lines| {
                lines.windows(2).find_map(|pair| {
                    (pair[0].text.contains("member=CloseNotification") && pair[1].text.trim() == id)
                        .then_some(())
                })
            });
    }

    /// The notification id the app logged for an item.
    pub fn notification_id(&self, question_id: &str) -> u64 {
        let event = self
            .log
            .wait_event("notification shown", &[("question_id", question_id)]);
        event["notification_id"].as_u64().unwrap()
    }

    /// Runs a second `hark app`, which hands over to this one: the inbox
    /// window comes forward.
    pub fn open_inbox(&self) {
        let out = self.sandbox.hark(["app"]).output().unwrap();
        assert!(
            out.status.success(),
            "second hark app: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.log.wait_event("window shown", &[("window", "inbox")]);
    }

    /// Opens the tray icon's menu with a real click and presses `keys` in it
    /// (`Up` from the top wraps to the last entry, Quit).
    pub fn tray_menu(&self, keys: &[&str]) {
        self.open_tray_menu();
        self.press(keys);
    }

    /// Presses `keys` (xdotool key names) wherever the keyboard is.
    pub fn press(&self, keys: &[&str]) {
        let mut args = vec!["key"];
        args.extend_from_slice(keys);
        xdotool(&args);
    }

    /// Opens the tray icon's menu with a real click. The icon is the window
    /// named `hark-app` that trayer embeds at its right end; the menu is the
    /// one whose name and class are both `hark-app` (the app's windows are
    /// titled). `xdotool search --sync` waits for each to map.
    pub fn open_tray_menu(&self) {
        if !xdotool_succeeds(&["search", "--sync", "--onlyvisible", "--name", "^hark-app$"]) {
            // Seen rarely on a busy machine: say what the display holds.
            let tree = Command::new("xwininfo")
                .args(["-root", "-tree"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let windows: Vec<&str> = tree
                .lines()
                .filter(|l| l.contains("hark") || l.contains("panel"))
                .collect();
            let tray_log: Vec<String> = self
                .log
                .all()
                .into_iter()
                .filter(|l| l.contains("tray") || l.contains("WARN"))
                .collect();
            panic!(
                "the tray icon never showed in trayer\nwindows: {windows:#?}\napp log: {tray_log:#?}"
            );
        }
        xdotool(&["mousemove", "1262", "16", "click", "1"]);
        xdotool(&[
            "search",
            "--sync",
            "--onlyvisible",
            "--all",
            "--class",
            "--name",
            "^hark-app$",
        ]);
    }

    /// Saves a screenshot of the whole screen under `target/screenshots/`.
    pub fn screenshot_screen(&self, name: &str) {
        let status = Command::new("import")
            .args(["-window", "root"])
            .arg(screenshot_path(name))
            .status()
            .unwrap();
        assert!(status.success(), "import failed");
    }

    /// Saves a screenshot of the app's window, as it is on the screen, under
    /// `target/screenshots/`. (Taken from the X server: WebKit's automation
    /// never answers a screenshot of a page drawn without GPU compositing
    /// once its window has been hidden and shown again.)
    pub async fn screenshot(&self, name: &str) {
        // Two animation frames: what the page shows now has been painted.
        self.client
            .execute_async(
                "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                vec![],
            )
            .await
            .unwrap();
        let id = xdotool_output(&["search", "--onlyvisible", "--name", "^hark — "])
            .and_then(|found| found.lines().next().map(str::to_owned))
            .unwrap_or_else(|| panic!("the app's window is not on the screen"));
        let status = Command::new("import")
            .args(["-window", &id])
            .arg(screenshot_path(name))
            .status()
            .unwrap();
        assert!(status.success(), "import failed");
    }

    /// Ends the WebDriver session (which closes the app), then everything
    /// else the desktop started.
    pub async fn stop(self) {
        let close = self.client.clone().close();
        let _ = tokio::time::timeout(Duration::from_secs(5), close).await;
    }
}

/// Ends whatever the desktop started, also when a test fails half-way: an
/// app left running would keep its tray icon and hand it to the next test's
/// tray host, which would then click the wrong icon.
impl Drop for Desktop {
    fn drop(&mut self) {
        let app = self.log.all().iter().find_map(|l| {
            let event: Value = serde_json::from_str(l).ok()?;
            (event["message"] == "desktop app started").then(|| event["pid"].as_u64())?
        });
        let still_ours = |pid: u64| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim() == "hark-app")
        };
        // SIGTERM, not SIGKILL: the app settles what is pending, and a killed
        // driver leaves WebKitWebDriver running.
        let app = app
            .filter(|pid| still_ours(*pid))
            .and_then(|pid| u32::try_from(pid).ok());
        if let Some(pid) = app {
            let _ = process::terminate(pid);
        }
        self.driver.stop();
        // The app is not our child: wait for it to be gone, so the next test
        // starts on a display it no longer holds. The tray host and the
        // session stop after this, as the fields drop.
        if let Some(pid) = app {
            process::wait_gone(&[pid], EXIT_PATIENCE);
        }
    }
}

/// Where screenshot `name` goes: `target/screenshots/NAME.png`; only
/// `scripts/screenshots` copies them into `docs/`, so a test run leaves the
/// tree as it was.
pub fn screenshot_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.png"))
}

/// Runs xdotool, failing the test when it fails or outwaits our patience.
fn xdotool(args: &[&str]) {
    assert!(
        xdotool_succeeds(args),
        "xdotool {args:?} failed or timed out"
    );
}

/// Whether xdotool succeeds within our patience.
fn xdotool_succeeds(args: &[&str]) -> bool {
    xdotool_output(args).is_some()
}

/// What xdotool prints, if it succeeds within our patience.
///
/// A `search` walks every window on the display and asks each for its
/// attributes; a window destroyed between the two (the app maps and unmaps
/// its own while the test runs) makes xdotool die of `BadWindow` at once.
/// Such a search is run again, as long as patience lasts; `--sync` itself
/// waits for the window, so a retry only follows a failure, never a poll.
fn xdotool_output(args: &[&str]) -> Option<String> {
    let deadline = Instant::now() + PATIENCE;
    let retries = if args.first() == Some(&"search") {
        10
    } else {
        0
    };
    for _ in 0..=retries {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let out = Command::new("timeout")
            .arg(format!("{:.1}", left.as_secs_f64()))
            .arg("xdotool")
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        if out.status.success() {
            return Some(String::from_utf8_lossy(&out.stdout).into_owned());
        }
    }
    None
}

/// An XPath string literal for any text.
fn xpath_literal(text: &str) -> String {
    if !text.contains('\'') {
        format!("'{text}'")
    } else {
        format!("concat('{}')", text.replace('\'', "', \"'\", '"))
    }
}
