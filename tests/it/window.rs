//! The operator's window: what agents write is rendered as Markdown and
//! can carry nothing live into the page; AskUserQuestion's previews show
//! for the focused option, and a note typed beside an answer reaches the
//! agent (the real app under Xvfb, driven through WebDriver).

use crate::desktop::ask_from_agent;
use crate::support::desktop::{Desktop, ENTER};
use crate::support::*;
use hark_harness::PATIENCE;
use serde_json::{Value, json};

/// The database question, its SQLite option previewing a schema.
fn previewed() -> Value {
    let mut asked = db();
    asked["question"] = json!("Which database? Use `sqlite` if unsure.");
    asked["options"][1]["preview"] = json!("```sql\nCREATE TABLE runs (id TEXT PRIMARY KEY);\n```");
    asked
}

type Call = tokio::task::JoinHandle<rmcp::model::CallToolResult>;

/// The modal on the previewed question, its second option (SQLite, with
/// the preview) focused.
async fn previewed_modal(desktop: &Desktop, session: &str) -> (crate::support::Agent, Call) {
    let (agent, call) = ask_from_agent(desktop, session, questions(&[previewed()])).await;
    desktop.view("modal").await;
    desktop.keys("2").await;
    desktop
        .wait_for("//section[@id='preview' and not(@hidden)]//pre/code")
        .await;
    (agent, call)
}

/// Enter answers the focused SQLite, and the agent gets it.
async fn enter_answers_sqlite(desktop: &Desktop, call: Call) {
    desktop.keys(ENTER).await;
    let got: Value = serde_json::from_str(&text(&call.await.unwrap())).unwrap();
    assert_eq!(
        got["answers"]["Which database? Use `sqlite` if unsure."],
        "SQLite"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preview_renders_as_code_for_the_focused_option_and_a_note_reaches_the_agent() {
    let desktop = Desktop::start().await;
    let (agent, call) = ask_from_agent(&desktop, "previews", questions(&[previewed()])).await;
    desktop.view("modal").await;
    // Markdown: the code span is code.
    desktop
        .wait_for("//*[@id='question-text']//code[text()='sqlite']")
        .await;
    // The first option has no preview; focusing the second shows its own.
    desktop.keys("2").await;
    let code = desktop
        .wait_for(
            "//section[@id='preview' and not(@hidden)]//pre/code[contains(., 'CREATE TABLE runs')]",
        )
        .await;
    assert_eq!(
        code.attr("class").await.unwrap().as_deref(),
        Some("language-sql")
    );
    desktop.screenshot("modal-preview").await;
    // A note, opened from the keyboard, sent with the answer.
    desktop.keys("\u{e00a}n\u{e000}").await; // Alt+N, then Alt released
    desktop
        .wait_for("//details[@id='notes-box' and @open]")
        .await;
    desktop.keys("keep it in one file").await;
    desktop.keys(ENTER).await;
    let result = call.await.unwrap();
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        got,
        json!({
            "answers": {"Which database? Use `sqlite` if unsure.": "SQLite"},
            "annotations": {"Which database? Use `sqlite` if unsure.": {
                "preview": "```sql\nCREATE TABLE runs (id TEXT PRIMARY KEY);\n```",
                "notes": "keep it in one file"
            }}
        })
    );
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_supplied_html_scripts_images_and_links_are_inert() {
    let desktop = Desktop::start().await;
    let mut hostile = db();
    hostile["question"] = json!(
        "Which `database`? <script>window.pwned = 1</script> <img src=http://127.0.0.1:9/x.png onerror=\"window.pwned = 2\">"
    );
    hostile["options"][0]["description"] =
        json!("[docs](javascript:window.pwned=3) ![logo](http://127.0.0.1:9/logo.png)");
    hostile["options"][1]["preview"] =
        json!("<iframe src=http://127.0.0.1:9/></iframe> <style>body{display:none}</style>");
    let (agent, call) = ask_from_agent(&desktop, "hostile", questions(&[hostile])).await;
    desktop.view("modal").await;
    // Rendered (the code span is code), and focused on the previewed option.
    desktop
        .wait_for("//*[@id='question-text']//code[text()='database']")
        .await;
    desktop.keys("2").await;
    desktop
        .wait_for("//section[@id='preview' and not(@hidden)]")
        .await;
    let found = desktop
        .client
        .execute(
            "const live = document.querySelectorAll('#modal script, #modal img, #modal a, #modal iframe, #modal style, #modal [onerror], #modal [href], #modal [src]');
             return [live.length, window.pwned === undefined, document.getElementById('question-text').textContent];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(found[0], 0, "nothing live in the page: {found}");
    assert_eq!(found[1], true, "no agent script ran: {found}");
    // What the agent tried is shown as text.
    assert!(
        found[2]
            .as_str()
            .unwrap()
            .contains("<script>window.pwned = 1</script>"),
        "{found}"
    );
    let link = desktop
        .wait_for("//span[@class='link' and text()='docs']")
        .await;
    assert_eq!(
        link.attr("title").await.unwrap().as_deref(),
        Some("javascript:window.pwned=3")
    );
    link.click().await.unwrap();
    desktop.keys(ENTER).await;
    let result = call.await.unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let pwned = desktop
        .client
        .execute("return window.pwned === undefined;", vec![])
        .await
        .unwrap();
    assert_eq!(pwned, true, "a click on the link ran nothing");
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inbox_is_driven_by_keys_alone_move_filter_open_and_answer() {
    let desktop = Desktop::start().await;
    let (alpha, alpha_call) = ask_from_agent(&desktop, "alpha", questions(&[db()])).await;
    desktop.log.question_id("alpha");
    let (beta, beta_call) = ask_from_agent(&desktop, "beta", questions(&[features()])).await;
    let beta_id = desktop.log.question_id("beta");
    desktop.open_inbox();
    desktop.view("inbox").await;
    // The first waiting row is selected; j moves down, k back up.
    desktop
        .wait_for(
            "//table[@id='pending']//tr[@aria-selected='true' and contains(., 'session alpha')]",
        )
        .await;
    desktop.keys("j").await;
    desktop
        .wait_for(&format!(
            "//table[@id='pending']//tr[@data-id='{beta_id}' and @aria-selected='true']"
        ))
        .await;
    desktop.keys("k").await;
    desktop
        .wait_for(
            "//table[@id='pending']//tr[@aria-selected='true' and contains(., 'session alpha')]",
        )
        .await;
    // / filters (by session here), Enter goes to the list, Enter opens.
    desktop.keys("/").await;
    desktop.keys("beta").await;
    desktop
        .wait_for("//table[@id='pending']//tr[contains(., 'session alpha') and @hidden]")
        .await;
    desktop.keys(ENTER).await;
    desktop.keys(ENTER).await;
    desktop.view("modal").await;
    desktop.wait_for_question("Which features?").await;
    desktop.keys("2").await;
    desktop.keys(ENTER).await;
    let answered: Value = serde_json::from_str(&text(&beta_call.await.unwrap())).unwrap();
    assert_eq!(
        answered["answers"]["Which features?"],
        json!(["Auth (Recommended)", "Billing"])
    );
    // Sections by their letter: h for the history, where beta now is.
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.keys(ENTER).await;
    alpha_call.await.unwrap();
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.keys("h").await;
    desktop
        .wait_for(
            "//section[@id='panel-history' and not(@hidden)]//tr[contains(., 'session beta')]",
        )
        .await;
    alpha.cancel().await.unwrap();
    beta.cancel().await.unwrap();
    desktop.stop().await;
}

/// Runs axe-core (the copy `ui/package-lock.json` pins) on the page as it
/// is; the serious and critical violations, as `rule: target…` lines.
async fn audit(desktop: &Desktop) -> Vec<String> {
    let axe = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("ui/node_modules/axe-core/axe.min.js");
    let source = std::fs::read_to_string(&axe).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run ./scripts/setup --tests, which installs it",
            axe.display()
        )
    });
    desktop.client.execute(&source, vec![]).await.unwrap();
    let found = desktop
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
        .unwrap();
    serde_json::from_value(found).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accessibility_audit_finds_nothing_serious_in_the_modal_or_the_inbox() {
    let desktop = Desktop::start().await;
    // The question and the preview are rendered by the same Markdown call.
    let (agent, call) = previewed_modal(&desktop, "audited").await;
    let modal = audit(&desktop).await;
    assert!(modal.is_empty(), "the modal: {modal:#?}");
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop
        .wait_for("//table[@id='pending']//tr[contains(., 'session audited')]")
        .await;
    for section in ["waiting", "history", "sessions", "runs", "new-run"] {
        desktop.section(section).await;
        let found = audit(&desktop).await;
        assert!(found.is_empty(), "the inbox's {section}: {found:#?}");
    }
    desktop.section("waiting").await;
    // Enter on the selected row opens it in the modal, Enter there answers.
    desktop.keys(ENTER).await;
    desktop.view("modal").await;
    desktop
        .wait_for("//*[@id='question-text']//code[text()='sqlite']")
        .await;
    desktop.keys(ENTER).await;
    call.await.unwrap();
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

/// The app as a person starts it (no WebDriver), on its own session, with
/// the window released a second after nothing waits (30 s by default).
fn start_app_alone() -> (hark_harness::Session, hark_harness::process::Started, Lines) {
    let session = hark_harness::desktop::Session::start(&sandbox())
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let sandbox = &session.sandbox;
    std::fs::write(sandbox.config(), "window_release_secs = 1\n").unwrap();
    let mut app = sandbox.command(bin_dir().join("hark-app"));
    app.env("HARK_LOG_FORMAT", "json")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut app = hark_harness::process::Started::spawn("hark-app", &mut app)
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let log = Lines::follow("hark-app", app.child.stderr.take().unwrap());
    log.wait_event("hark is serving the operator", &[]);
    (session, app, log)
}

const WINDOW: &str = "hark-window";
const WEB: &str = "WebKitWebProces";
const NETWORK: &str = "WebKitNetworkPr";

/// Waits for the log's event `message` after line `from` whose `key` is `value`.
fn event_from(log: &Lines, from: usize, message: &str, key: &str, value: &str) -> Value {
    log.wait_event_from(from, message, PATIENCE, |e| e[key] == value)
        .unwrap_or_else(|e| panic!("{message}: {e}"))
        .value
}

/// The id of the question session `session` asked after line `from`.
fn asked_id(log: &Lines, from: usize, session: &str) -> String {
    event_from(log, from, "operator.question.asked", "session_id", session)["question_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The pid of the window process that showed a window after line `from`.
fn window_started(log: &Lines, from: usize) -> u32 {
    event_from(log, from, "window shown", "level", "INFO")["pid"]
        .as_u64()
        .unwrap() as u32
}

/// The pid of the window process started ahead after line `from`.
fn started_ahead(log: &Lines, from: usize) -> u32 {
    log.wait_event_from(from, "window process started", PATIENCE, |e| {
        e["ahead"] == true
    })
    .unwrap_or_else(|e| panic!("a window process started ahead: {e}"))
    .value["pid"]
        .as_u64()
        .unwrap() as u32
}

/// The app's one window process while nothing is shown: one started
/// ahead (`hark-window`'s `dormant`), running no WebKit process.
fn waiting_ahead(app: u32) -> u32 {
    let waiting = hark_core::files::children_named(app, WINDOW);
    assert_eq!(
        waiting.len(),
        1,
        "one window process waits ahead: {waiting:?}"
    );
    for webkit in [WEB, NETWORK] {
        assert_eq!(
            hark_core::files::children_named(waiting[0], webkit),
            Vec::<u32>::new(),
            "the window process waiting ahead runs no {webkit}"
        );
    }
    waiting[0]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_window_nobody_sees_is_released_with_its_process_and_webkits_after_each_ask() {
    let _turn = crate::support::desktop::ONE_AT_A_TIME.lock().await;
    let (session, mut app, log) = start_app_alone();
    let sandbox = session.sandbox.clone();
    // Nothing is shown at start, so WebKit runs nowhere: one window
    // process waits ahead, its libraries loaded, and the first show is its.
    let mut ahead = started_ahead(&log, 0);
    assert_eq!(waiting_ahead(app.id()), ahead);
    for round in ["first", "again"] {
        let from = log.len();
        let asker = crate::inbox::ask_in_background_in(&sandbox, round, questions(&[db()]));
        let id = asked_id(&log, from, round);
        let window = window_started(&log, from);
        assert_eq!(
            window, ahead,
            "{round}: the window process waiting ahead shows it"
        );
        event_from(&log, from, "modal.shown", "question_id", &id);
        assert_eq!(
            hark_core::files::children_named(app.id(), WINDOW),
            vec![window],
            "{round}: the app's one window process"
        );
        let web = hark_core::files::children_named(window, WEB);
        assert_eq!(web.len(), 1, "{round}: the modal's web process: {web:?}");
        let network = hark_core::files::children_named(window, NETWORK);
        assert_eq!(
            network.len(),
            1,
            "{round}: WebKit's network process: {network:?}"
        );
        // Both find flite's voice first (`hark-window`'s `preload`)
        // where WebKit links it, as it does here.
        let voice = mapped(window, VOICE);
        for pid in [web[0], network[0]] {
            assert_eq!(
                preloaded(pid).first(),
                voice.as_ref(),
                "{round}: {pid} preloads the voice the window process loaded"
            );
        }
        answer(&sandbox, &id, "SQLite");
        let out = asker.wait_with_output().unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("SQLite"),
            "{round}: the asker got the answer"
        );
        event_from(&log, from, "window released", "level", "INFO");
        let gone = [vec![window], web, network].concat();
        assert!(
            hark_harness::process::wait_gone(&gone, std::time::Duration::from_secs(10)),
            "{round}: the window process and WebKit's went: {gone:?}"
        );
        // And another waits ahead for the next.
        ahead = started_ahead(&log, from);
        assert_ne!(ahead, window, "{round}: a new window process waits ahead");
        assert_eq!(waiting_ahead(app.id()), ahead);
    }
    app.stop();
}

/// flite's voice whose symbols WebKit's processes look up most.
const VOICE: &str = "libflite_cmu_time_awb.so";

/// The path of the file `pid` maps that is named `name` up to its version.
fn mapped(pid: u32, name: &str) -> Option<String> {
    use hark_core::platform::pages::{mapped_path, named_up_to_version};
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter_map(mapped_path)
        .find(|path| named_up_to_version(path, name))
        .map(str::to_owned)
}

/// What `pid` preloads, in order (`LD_PRELOAD` in its environment).
fn preloaded(pid: u32) -> Vec<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(b"LD_PRELOAD="))
        .map(|v| {
            String::from_utf8_lossy(v)
                .split(':')
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The mappings of `pid` that are writable and executable at once.
fn writable_and_executable(pid: u32) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter(|l| {
            let perms = l.split_whitespace().nth(1).unwrap_or("");
            perms.contains('w') && perms.contains('x')
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn what_agents_wrote_is_shown_by_processes_with_no_writable_executable_memory() {
    let _turn = crate::support::desktop::ONE_AT_A_TIME.lock().await;
    let (session, mut app, log) = start_app_alone();
    let from = log.len();
    let asker = crate::inbox::ask_in_background_in(&session.sandbox, "wx", questions(&[db()]));
    let id = asked_id(&log, from, "wx");
    let window = window_started(&log, from);
    event_from(&log, from, "modal.shown", "question_id", &id);
    // JavaScriptCore's JIT (off: rendering.rs) would hold a region both
    // writable and executable in the window and in the web process that
    // runs the page showing the agent's text.
    let web = hark_core::files::children_named(window, WEB);
    assert_eq!(web.len(), 1, "the modal's web process: {web:?}");
    for pid in [window, web[0]] {
        let wx = writable_and_executable(pid);
        assert!(wx.is_empty(), "{pid}: writable and executable: {wx:?}");
    }
    answer(&session.sandbox, &id, "SQLite");
    let out = asker.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("SQLite"));
    app.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_window_process_killed_mid_question_loses_nothing_and_the_next_open_shows_it_again() {
    let _turn = crate::support::desktop::ONE_AT_A_TIME.lock().await;
    let (session, mut app, log) = start_app_alone();
    let sandbox = session.sandbox.clone();
    let from = log.len();
    let asker = crate::inbox::ask_in_background_in(&sandbox, "killed", questions(&[db()]));
    let id = asked_id(&log, from, "killed");
    let notification =
        event_from(&log, from, "notification shown", "question_id", &id)["notification_id"]
            .as_u64()
            .unwrap();
    let window = window_started(&log, from);
    event_from(&log, from, "modal.shown", "question_id", &id);
    // The window process dies under the operator's eyes.
    let killed = log.len();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(window as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    log.wait_event_from(killed, "window process ended by itself", PATIENCE, |_| true)
        .unwrap_or_else(|e| panic!("{e}"));
    // The question is still pending, here and for the agent.
    let inbox = crate::support::succeed(&sandbox, &["inbox", "--json"]);
    assert!(
        String::from_utf8_lossy(&inbox.stdout).contains(&id),
        "still pending after the window died: {}",
        String::from_utf8_lossy(&inbox.stdout)
    );
    // The next open (its notification's body, clicked) starts a new window
    // on the same question.
    let reopened = log.len();
    session
        .choose_action(notification, "default")
        .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    let again = window_started(&log, reopened);
    assert_ne!(again, window, "a new window process");
    event_from(&log, reopened, "modal.shown", "question_id", &id);
    answer(&sandbox, &id, "SQLite");
    let out = asker.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("SQLite"),
        "the agent got the answer given after the window died: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    app.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_new_run_forms_intake_builder_asks_its_question_before_the_agent_starts() {
    use crate::desktop::{dispatched, ended_well, inbox_with_the_fake_agent};
    let work = hark_harness::scratch();
    let log = work.path().join("fake.log");
    let desktop = inbox_with_the_fake_agent(&[("FAKE_CLAUDE_LOG", log.to_str().unwrap())]).await;
    desktop.fill("#dispatch-prompt", "SAY shipping").await;
    desktop.click("#intake-add").await;
    desktop.fill("#intake-id-1", "env").await;
    desktop.fill("#intake-prompt-1", "Which environment?").await;
    desktop
        .fill("#intake-options-1", "Staging, Production")
        .await;
    desktop.fill("#intake-default-1", "Staging").await;
    desktop.click("#dispatch-start").await;
    let run_id = dispatched(&desktop);
    desktop.view("modal").await;
    desktop.wait_for_question("Which environment?").await;
    assert!(
        invocations(&log).is_empty(),
        "the agent waits for the intake"
    );
    desktop.pick("Production").await;
    desktop.click("#submit").await;
    ended_well(&desktop, &run_id);
    let prompt = flag(&invocations(&log)[0], "-p").unwrap();
    assert!(
        prompt.contains("(env): Production"),
        "the answer is in the prompt: {prompt}"
    );
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn theme_dark_in_the_config_draws_the_window_dark_and_readable() {
    let desktop = Desktop::start_configured("theme = \"dark\"\n").await;
    let (agent, call) = previewed_modal(&desktop, "dark").await;
    let drawn = desktop
        .client
        .execute(
            "return [document.documentElement.dataset.theme, \
             getComputedStyle(document.documentElement).backgroundColor, \
             getComputedStyle(document.querySelector('#preview pre')).backgroundColor]",
            vec![],
        )
        .await
        .unwrap();
    // --bg and --code-bg, dark.
    assert_eq!(
        drawn,
        json!(["dark", "rgb(24, 27, 34)", "rgb(28, 32, 40)"]),
        "the page is dark"
    );
    let found = audit(&desktop).await;
    assert!(found.is_empty(), "the dark modal: {found:#?}");
    desktop.screenshot("modal-dark").await;
    enter_answers_sqlite(&desktop, call).await;
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn at_125_and_150_percent_the_modal_fits_its_width_and_every_control_is_reachable() {
    let desktop = Desktop::start().await;
    let (agent, call) = previewed_modal(&desktop, "zoomed").await;
    for zoom in [1.25, 1.5] {
        // What Ctrl+= does, at the scale asked.
        desktop
            .client
            .execute_async(
                "const [zoom, done] = arguments;
                 window.__TAURI_INTERNALS__.invoke('plugin:webview|set_webview_zoom', {value: zoom})
                   .then(() => requestAnimationFrame(() => requestAnimationFrame(() => done(null))), (e) => done(String(e)));",
                vec![json!(zoom)],
            )
            .await
            .unwrap();
        // Nothing wider than the window; each control scrolled to is on screen.
        let laid_out = desktop
            .client
            .execute(
                "const page = document.documentElement;
                 const controls = [...document.querySelectorAll('#modal button:not([hidden]), #modal input, #modal summary')]
                   .filter((e) => e.getClientRects().length > 0);
                 const off = controls.flatMap((e) => {
                   e.scrollIntoView({block: 'nearest', inline: 'nearest'});
                   const r = e.getBoundingClientRect();
                   const inside = r.left >= -1 && r.right <= page.clientWidth + 1
                     && r.top >= -1 && r.bottom <= page.clientHeight + 1;
                   return inside ? [] : [[e.id || e.tagName, r.left, r.top, r.right, r.bottom]];
                 });
                 return {width: innerWidth, overflow: page.scrollWidth - page.clientWidth, controls: controls.length, off};",
                vec![],
            )
            .await
            .unwrap();
        let expected_width = (600.0_f64 / zoom).round();
        assert!(
            (laid_out["width"].as_f64().unwrap() - expected_width).abs() <= 1.0,
            "zoomed to {zoom}: {laid_out}"
        );
        assert_eq!(laid_out["overflow"], 0, "zoomed to {zoom}: {laid_out}");
        assert_eq!(laid_out["off"], json!([]), "zoomed to {zoom}: {laid_out}");
        assert!(laid_out["controls"].as_u64().unwrap() >= 5, "{laid_out}");
        if zoom == 1.5 {
            desktop.screenshot("modal-150").await;
        }
    }
    // Answered from the keyboard: the digit picked SQLite.
    enter_answers_sqlite(&desktop, call).await;
    agent.cancel().await.unwrap();
    desktop.stop().await;
}
