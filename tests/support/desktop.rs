//! Drives the real desktop app the way a person would, on a headless X
//! display (run the tests under `xvfb-run`): each test gets a private D-Bus
//! session with a real notification server (dunst) and a `dbus-monitor`
//! watching it, and the app started by `tauri-driver` + `WebKitWebDriver`,
//! driven through WebDriver (fantoccini).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use super::{Lines, PATIENCE, hark};

/// One desktop at a time: the tests share an X display and two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub const ENTER: &str = "\u{e007}";
pub const ESCAPE: &str = "\u{e00c}";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn need(tool: &str) {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .unwrap();
    assert!(
        found.status.success(),
        "{tool} is not installed: run the tests with ./scripts/test, which installs it"
    );
}

/// Starts dunst on `bus` and waits until it owns the notification name. A
/// dunst that has not within 5 s is stopped and started again (twice at
/// most), its output shown: it is the tests' notification server, not
/// what they test.
fn start_dunst(bus: &str, notifications: &Lines) -> Child {
    for attempt in 1..=3 {
        let mut dunst = Command::new("dunst")
            .env("DBUS_SESSION_BUS_ADDRESS", bus)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = Lines::follow(dunst.stderr.take().unwrap());
        let serving = notifications.wait_within(Duration::from_secs(5), |lines| {
            lines
                .iter()
                .any(|l| l.contains("string \"org.freedesktop.Notifications\""))
                .then_some(())
        });
        if serving.is_some() {
            return dunst;
        }
        kill(&mut dunst);
        eprintln!(
            "dunst did not serve notifications within 5 s (attempt {attempt}); it said:\n{}",
            output.all().join("\n")
        );
    }
    panic!("dunst never served notifications (see its output above)");
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub struct Desktop {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub bus: String,
    bus_daemon: Child,
    dunst: Child,
    tray_host: Option<Child>,
    monitor: Child,
    /// What crossed the bus to the notification server.
    pub notifications: Lines,
    driver: Child,
    /// The app's log (JSON lines), which reaches us through tauri-driver.
    pub log: Lines,
    pub client: Client,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Desktop {
    pub async fn start() -> Desktop {
        Desktop::start_with(&[], false).await
    }

    /// Starts a private bus, dunst, a tray host when `tray`, and the app;
    /// `env` is added to the app's environment.
    pub async fn start_with(env: &[(&str, &str)], tray: bool) -> Desktop {
        let turn = ONE_AT_A_TIME.lock().await;
        assert!(
            std::env::var_os("DISPLAY").is_some(),
            "the desktop tests need an X display: run them under xvfb-run (see scripts/test)"
        );
        for tool in [
            "dbus-daemon",
            "dbus-monitor",
            "dunst",
            "tauri-driver",
            "WebKitWebDriver",
            "gdbus",
        ] {
            need(tool);
        }
        let app = Path::new(hark()).with_file_name("hark-app");
        assert!(
            app.exists(),
            "{} is missing: run `cargo build -p hark-app` first",
            app.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let mut bus_daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let bus_lines = Lines::follow(bus_daemon.stdout.take().unwrap());
        let bus = bus_lines
            .wait_for("the bus address", |l| l.starts_with("unix:"))
            .trim()
            .to_owned();
        let mut monitor = Command::new("dbus-monitor")
            .args([
                "--address",
                &bus,
                "interface='org.freedesktop.Notifications'",
                "interface='org.freedesktop.DBus',member='NameOwnerChanged'",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let notifications = Lines::follow(monitor.stdout.take().unwrap());
        notifications.wait_for("the monitor to attach", |l| l.starts_with("signal"));
        let dunst = start_dunst(&bus, &notifications);
        let tray_host = tray.then(|| {
            // trayer is a system-tray panel at the top right; it must be up before the app.
            Command::new("trayer")
                .args([
                    "--edge",
                    "top",
                    "--align",
                    "right",
                    "--widthtype",
                    "pixel",
                    "--width",
                    "96",
                    "--height",
                    "32",
                ])
                .env("DBUS_SESSION_BUS_ADDRESS", &bus)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        });
        if tray_host.is_some() {
            // Up means its panel is mapped, owning the tray selection: an icon
            // made before that may never be embedded.
            let status = Command::new("timeout")
                .arg(PATIENCE.as_secs().to_string())
                .args([
                    "xdotool",
                    "search",
                    "--sync",
                    "--onlyvisible",
                    "--name",
                    "^panel$",
                ])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "trayer never showed its panel");
        }
        let (port, native) = (free_port(), free_port());
        let socket = dir.path().join("run").join("hark.sock");
        let mut driver = Command::new("tauri-driver");
        driver
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("DBUS_SESSION_BUS_ADDRESS", &bus)
            .env("HARK_SOCKET", &socket)
            .env("HARK_DATA_DIR", dir.path().join("data"))
            .env("HARK_CONFIG", dir.path().join("no-config.toml"))
            .env("HARK_LOG_FORMAT", "json")
            .env_remove("HARK_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            driver.env(k, v);
        }
        let mut driver = driver.spawn().unwrap();
        let log = Lines::follow(driver.stderr.take().unwrap());
        let _stdout = Lines::follow(driver.stdout.take().unwrap());
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
            dir,
            socket,
            bus,
            bus_daemon,
            dunst,
            tray_host,
            monitor,
            notifications,
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
            "//p[@id='question-text' and text()={}]",
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
                    .filter(|(_, l)| l.contains("member=Notify"))
                    .find_map(|(at, _)| {
                        let call: Vec<String> = lines[at + 1..]
                            .iter()
                            .take_while(|l| !l.starts_with("method") && !l.starts_with("signal"))
                            .cloned()
                            .collect();
                        // Whole once its last argument (the expiry, an int32
                        // at the top level) is printed: the actions come after
                        // the body and may not have arrived yet.
                        let whole = call.iter().any(|l| l.starts_with("   int32 "));
                        (whole && call.iter().any(|l| l.contains(text))).then_some(call)
                    })
            })
    }

    /// Invokes a notification's action as the notification server would.
    pub fn invoke_action(&self, notification_id: u64, action: &str) {
        let status = Command::new("gdbus")
            .args([
                "emit",
                "--session",
                "--object-path",
                "/org/freedesktop/Notifications",
                "--signal",
                "org.freedesktop.Notifications.ActionInvoked",
                &format!("uint32 {notification_id}"),
                &format!("'{action}'"),
            ])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .status()
            .unwrap();
        assert!(status.success(), "gdbus emit failed");
    }

    /// Waits for the app to close notification `id` (a `CloseNotification`
    /// call on the bus).
    pub fn wait_for_close(&self, notification_id: u64) {
        let id = format!("uint32 {notification_id}");
        self.notifications
            .wait_until(&format!("CloseNotification({notification_id})"), |lines| {
                lines.windows(2).find_map(|pair| {
                    (pair[0].contains("member=CloseNotification") && pair[1].trim() == id)
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
        let out = Command::new(hark())
            .arg("app")
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .env("HARK_SOCKET", &self.socket)
            .env("HARK_DATA_DIR", self.dir.path().join("data"))
            .env("HARK_CONFIG", self.dir.path().join("no-config.toml"))
            .output()
            .unwrap();
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

    /// Saves a screenshot of the whole screen under `docs/screenshots/`.
    pub fn screenshot_screen(&self, name: &str) {
        let status = Command::new("import")
            .args(["-window", "root"])
            .arg(screenshot_path(name))
            .status()
            .unwrap();
        assert!(status.success(), "import failed");
    }

    /// Saves a screenshot of the app's window, as it is on the screen, under
    /// `docs/screenshots/`. (Taken from the X server: WebKit's automation
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
        let found = Command::new("xdotool")
            .args(["search", "--onlyvisible", "--name", "^hark — "])
            .output()
            .unwrap();
        let id = String::from_utf8_lossy(&found.stdout)
            .lines()
            .next()
            .map(str::to_owned)
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
        let app = app.filter(|pid| still_ours(*pid));
        for pid in app.into_iter().chain([u64::from(self.driver.id())]) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let _ = self.driver.wait();
        // The app is not our child: `tail --pid` waits for it to be gone, so
        // the next test starts on a display it no longer holds.
        if let Some(pid) = app {
            let _ = Command::new("timeout")
                .args([
                    "10",
                    "tail",
                    "-s",
                    "0.1",
                    &format!("--pid={pid}"),
                    "-f",
                    "/dev/null",
                ])
                .status();
        }
        if let Some(tray) = &mut self.tray_host {
            kill(tray);
        }
        for child in [&mut self.dunst, &mut self.monitor, &mut self.bus_daemon] {
            kill(child);
        }
    }
}

/// Where screenshot `name` goes: `docs/screenshots/NAME.png`.
fn screenshot_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
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
    Command::new("timeout")
        .arg(PATIENCE.as_secs().to_string())
        .arg("xdotool")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// An XPath string literal for any text.
fn xpath_literal(text: &str) -> String {
    if !text.contains('\'') {
        format!("'{text}'")
    } else {
        format!("concat('{}')", text.replace('\'', "', \"'\", '"))
    }
}

/// Runs `hark` against the desktop's socket.
pub fn hark_at(desktop: &Desktop, args: &[&str]) -> std::process::Output {
    Command::new(hark())
        .args(args)
        .env("HARK_SOCKET", &desktop.socket)
        .env("HARK_CONFIG", desktop.dir.path().join("no-config.toml"))
        .output()
        .unwrap()
}
