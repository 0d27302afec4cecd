//! The web surface in a real browser at a phone's size: headless Chromium
//! (Debian's, under chromedriver) emulating a 390×844 touch screen pairs
//! with a one-time code from `hark web pair`, sees what an agent asked (its
//! Markdown rendered, an option's preview), answers by tapping, and the
//! agent gets exactly that answer; an approval is allowed the same way and
//! the write goes through. axe-core audits every page (the pair page, the
//! modal, the inbox's sections) and nothing serious or critical may be
//! found; no page scrolls sideways and every target is a finger's size.
//! The phone view of the question is saved as target/screenshots/phone.png
//! (`scripts/screenshots` copies it to docs/phone.png, which the book's web
//! surface page, docs/src/guides/web.md, shows). A push's click
//! (`/#item/ID`) opens the modal on that item, through pairing on a phone
//! not yet paired.

use std::path::{Path, PathBuf};

use fantoccini::Locator;
use hark_harness::PATIENCE;
use hark_harness::browser::{Browser, PHONE_WIDTH};
use serde_json::{Value, json};

use crate::support::*;

/// The database question, its Markdown in the text and SQLite previewing a
/// schema (what an agent's AskUserQuestion carries).
fn previewed() -> Value {
    let mut asked = db();
    asked["question"] = json!("Which database? Use `sqlite` if unsure.");
    asked["options"][1]["description"] = json!("One file next to the config: **no server**.");
    asked["options"][1]["preview"] =
        json!("```sql\nCREATE TABLE runs (id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL);\n```");
    asked
}

/// The axe-core copy `ui/package-lock.json` pins (scripts/setup installs it).
fn axe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/node_modules/axe-core/axe.min.js")
}

/// Panics with `error`'s causes.
fn report(error: impl std::error::Error + 'static) -> String {
    hark_harness::Report(&error).to_string()
}

/// The page, audited: nothing serious or critical.
async fn audit(browser: &Browser, page: &str) {
    let found = browser
        .audit(&axe())
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));
    assert!(found.is_empty(), "axe-core on {page}: {found:#?}");
}

/// The page fits the phone's width (nothing scrolls sideways), and every
/// visible target a finger taps is at least 44 px each way.
async fn fits_a_phone(browser: &Browser, page: &str) {
    let found = browser
        .client
        .execute(
            "const targets = 'button, a[href], label.option, [role=tab], summary, select, textarea, \
               input:not([type=radio]):not([type=checkbox]):not([type=hidden])';
             const small = [...document.querySelectorAll(targets)]
               .filter((e) => e.getClientRects().length > 0)
               .map((e) => [e.id || e.textContent.trim().slice(0, 30), e.getBoundingClientRect()])
               .filter(([, r]) => r.width < 44 || r.height < 44)
               .map(([name, r]) => `${name}: ${Math.round(r.width)}×${Math.round(r.height)}`);
             return {width: document.documentElement.scrollWidth, small};",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        found["width"].as_u64().unwrap() <= u64::from(PHONE_WIDTH),
        "{page} scrolls sideways: {} px wide",
        found["width"]
    );
    assert_eq!(found["small"], json!([]), "{page}: targets under 44 px");
}

type Call = tokio::task::JoinHandle<rmcp::model::CallToolResult>;

/// A fresh agent in session `session` asks `asked`; the agent and its call.
async fn ask(sandbox: &Sandbox, session: &str, asked: Value) -> (Agent, Call) {
    let agent = agent(sandbox, &[("HARK_SESSION_ID", session)]).await;
    let peer = agent.peer().clone();
    let call = tokio::spawn(async move {
        let Value::Object(args) = questions(&[asked]) else {
            unreachable!()
        };
        peer.call_tool(rmcp::model::CallToolRequestParams::new("ask").with_arguments(args))
            .await
            .unwrap()
    });
    (agent, call)
}

/// Taps the element matching `xpath` once it is there.
async fn tap(browser: &Browser, xpath: &str) {
    let element = browser
        .wait_for(xpath, PATIENCE)
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));
    browser
        .tap(&element)
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));
}

async fn wait_for(browser: &Browser, xpath: &str) -> fantoccini::elements::Element {
    browser
        .wait_for(xpath, PATIENCE)
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)))
}

/// The option with this label, as a finger taps it (its whole row).
fn option(label: &str) -> String {
    format!("//label[contains(@class, 'option')][.//input[@name='choice' and @value='{label}']]")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_phone_pairs_answers_a_question_and_allows_an_approval_by_touch() {
    let sandbox = sandbox();
    let daemon = serve_in(&sandbox, json!({}), &["--web", "127.0.0.1:0"]);
    let listening = daemon.log.wait_event("web surface listening", &[]);
    let url = listening["url"].as_str().unwrap().to_owned();
    let browser = Browser::phone(&sandbox)
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));

    // Without a session, the page sends the browser to pairing.
    browser.goto(&format!("{url}/")).await.unwrap();
    wait_for(&browser, "//form[@id='pair-form']").await;
    audit(&browser, "the pair page").await;
    fits_a_phone(&browser, "the pair page").await;
    let proposed = browser
        .client
        .find(Locator::Id("pair-device"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(proposed.as_deref(), Some("Chrome on Android (Pixel 8)"));

    // A wrong code says so, and pairs nothing.
    let code_field = browser.client.find(Locator::Id("pair-code")).await.unwrap();
    code_field.send_keys("ZZZZ-ZZZZ").await.unwrap();
    tap(&browser, "//button[@id='pair-submit']").await;
    let error = wait_for(&browser, "//p[@id='pair-error' and not(@hidden)]").await;
    assert!(
        error.text().await.unwrap().contains("wrong"),
        "{:?}",
        error.text().await
    );
    audit(&browser, "the pair page with its error").await;

    // The link `hark web pair` prints carries the code: the name is edited,
    // the Pair button tapped.
    let pairing: Value =
        serde_json::from_slice(&succeed(&sandbox, &["web", "pair", "--json"]).stdout).unwrap();
    let link = pairing["url"].as_str().unwrap();
    assert!(link.contains("pair.html#code="), "{link}");
    browser.goto(link).await.unwrap();
    let code = browser
        .client
        .find(Locator::Id("pair-code"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(code.as_deref(), pairing["code"].as_str());
    let name = browser
        .client
        .find(Locator::Id("pair-device"))
        .await
        .unwrap();
    name.clear().await.unwrap();
    name.send_keys("Operator's phone").await.unwrap();
    tap(&browser, "//button[@id='pair-submit']").await;
    wait_for(
        &browser,
        "//main[@id='modal' and not(@hidden)]//p[@id='idle' and not(@hidden)]",
    )
    .await;
    wait_for(
        &browser,
        "//*[@id='device-name' and contains(., \"Operator's phone\")]",
    )
    .await;

    // An agent asks: the phone shows it, its Markdown rendered.
    let (agent, call) = ask(&sandbox, "phone", previewed()).await;
    wait_for(&browser, "//*[@id='question-text']//code[text()='sqlite']").await;
    wait_for(
        &browser,
        "//small[@id='desc-1']//strong[text()='no server']",
    )
    .await;
    let asker = browser.client.find(Locator::Id("asker")).await.unwrap();
    assert!(asker.text().await.unwrap().contains("session phone"));
    // Tapping SQLite (Postgres is the default) shows its preview.
    tap(&browser, &option("SQLite")).await;
    wait_for(
        &browser,
        "//section[@id='preview' and not(@hidden)]//pre/code[contains(., 'CREATE TABLE runs')]",
    )
    .await;
    audit(&browser, "the modal").await;
    fits_a_phone(&browser, "the modal").await;
    let png = browser
        .screenshot()
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));
    std::fs::write(crate::support::desktop::screenshot_path("phone"), png).unwrap();
    tap(&browser, "//button[@id='submit']").await;
    let got: Value = serde_json::from_str(&text(&call.await.unwrap())).unwrap();
    assert_eq!(
        got["answers"],
        json!({"Which database? Use `sqlite` if unsure.": "SQLite"}),
        "{got}"
    );
    wait_for(&browser, "//p[@id='idle' and not(@hidden)]").await;

    // A read-only run's edit asks for approval: allowed for this action.
    let work = hark_harness::scratch();
    let file = work.path().join("lib.rs");
    std::fs::write(&file, "let x = 1;\n").unwrap();
    let edit = format!(
        "TOOL Edit {}",
        json!({"file_path": file, "old_string": "let x = 1;", "new_string": "let x = 10;"})
    );
    let run = spawn_run(&sandbox, &["--read-only", "--session", "gate"], &edit);
    wait_for(
        &browser,
        "//pre[@id='approval-preview' and contains(., '+ let x = 10;')]",
    )
    .await;
    assert_eq!(
        browser
            .client
            .find(Locator::Id("approval-tool"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "Edit"
    );
    audit(&browser, "the modal on an approval").await;
    fits_a_phone(&browser, "the modal on an approval").await;
    tap(&browser, &option("Allow this action only")).await;
    tap(&browser, "//button[@id='submit']").await;
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "let x = 10;\n");
    let items = inbox(&sandbox);
    let approval = items.iter().find(|i| i["kind"] == "approval").unwrap();
    assert_eq!(
        approval["outcome"],
        json!({"outcome": "approved", "scope": "action"})
    );
    for item in &items {
        assert_eq!(item["replied_by"], "web", "{item}");
        assert_eq!(item["replied_device"]["name"], "Operator's phone", "{item}");
    }

    // Two wait: the inbox's Answer opens the modal on the one tapped, not
    // on the oldest.
    let (older, older_call) = ask(
        &sandbox,
        "older",
        question("Which port?", "Port", &["80", "443"], false),
    )
    .await;
    let (newer, newer_call) = ask(
        &sandbox,
        "newer",
        question("Which branch?", "Branch", &["main", "develop"], false),
    )
    .await;
    wait_for(
        &browser,
        "//*[@id='question-text' and normalize-space(.)='Which port?']",
    )
    .await;
    tap(&browser, "//a[@id='to-inbox']").await;
    wait_for(&browser, "//main[@id='inbox' and not(@hidden)]").await;
    tap(
        &browser,
        "//table[@id='pending']//tr[contains(., 'Which branch?')]//button[text()='Answer']",
    )
    .await;
    wait_for(&browser, "//main[@id='modal' and not(@hidden)]//*[@id='question-text' and normalize-space(.)='Which branch?']").await;
    tap(&browser, &option("develop")).await;
    tap(&browser, "//button[@id='submit']").await;
    let got: Value = serde_json::from_str(&text(&newer_call.await.unwrap())).unwrap();
    assert_eq!(got["answers"], json!({"Which branch?": "develop"}), "{got}");
    wait_for(
        &browser,
        "//*[@id='question-text' and normalize-space(.)='Which port?']",
    )
    .await;
    tap(&browser, "//button[@id='skip']").await;
    let skipped = text(&older_call.await.unwrap());
    assert!(
        skipped.starts_with(NOT_ANSWERED) && skipped.contains("skipped"),
        "{skipped}"
    );

    // The inbox, by its link: all answered, by this phone, which the
    // Devices section lists; every section audited.
    tap(&browser, "//a[@id='to-inbox']").await;
    wait_for(&browser, "//main[@id='inbox' and not(@hidden)]").await;
    for section in ["waiting", "history", "sessions", "runs", "devices"] {
        tap(&browser, &format!("//button[@id='tab-{section}']")).await;
        wait_for(
            &browser,
            &format!("//section[@id='panel-{section}' and not(@hidden)]"),
        )
        .await;
        if section == "history" {
            wait_for(
                &browser,
                "//table[@id='history']//tr[contains(., 'session phone') and contains(., \"answered on phone (Operator's phone)\")]",
            )
            .await;
        }
        if section == "devices" {
            wait_for(
                &browser,
                "//table[@id='devices']//tr[contains(., \"Operator's phone (this device)\")]",
            )
            .await;
        }
        audit(&browser, &format!("the inbox's {section}")).await;
        fits_a_phone(&browser, &format!("the inbox's {section}")).await;
    }
    // What only the app does is not offered.
    let new_run = browser
        .client
        .find(Locator::Id("tab-new-run"))
        .await
        .unwrap();
    assert!(!new_run.is_displayed().await.unwrap());

    for agent in [agent, older, newer] {
        agent.cancel().await.unwrap();
    }
    browser.stop().await;
    drop(daemon);
}

/// The id of the item `session` asked, once the daemon has it.
fn asked_id(daemon: &Daemon, session: &str) -> String {
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", session)])["question_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The modal, showing the question `text`.
fn modal_on(text: &str) -> String {
    format!(
        "//main[@id='modal' and not(@hidden)]//*[@id='question-text' and normalize-space(.)='{text}']"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_click_opens_its_item_on_the_phone_even_before_pairing() {
    let sandbox = sandbox();
    let daemon = serve_in(&sandbox, json!({}), &["--web", "127.0.0.1:0"]);
    let listening = daemon.log.wait_event("web surface listening", &[]);
    let url = listening["url"].as_str().unwrap().to_owned();
    let (older, older_call) = ask(
        &sandbox,
        "older",
        question("Which port?", "Port", &["80", "443"], false),
    )
    .await;
    let older_id = asked_id(&daemon, "older");
    let (newer, newer_call) = ask(
        &sandbox,
        "newer",
        question("Which branch?", "Branch", &["main", "develop"], false),
    )
    .await;
    let newer_id = asked_id(&daemon, "newer");
    let browser = Browser::phone(&sandbox)
        .await
        .unwrap_or_else(|e| panic!("{}", report(e)));

    // The newer one's push is tapped on a phone not yet paired: pairing,
    // which keeps the item to open (and nothing else) through it.
    browser
        .goto(&format!("{url}/#item/{newer_id}"))
        .await
        .unwrap();
    wait_for(&browser, "//form[@id='pair-form']").await;
    let at = browser.client.current_url().await.unwrap();
    assert_eq!(at.fragment(), Some(format!("item={newer_id}").as_str()));
    let pairing: Value =
        serde_json::from_slice(&succeed(&sandbox, &["web", "pair", "--json"]).stdout).unwrap();
    let code = browser.client.find(Locator::Id("pair-code")).await.unwrap();
    code.send_keys(pairing["code"].as_str().unwrap())
        .await
        .unwrap();
    tap(&browser, "//button[@id='pair-submit']").await;
    // Paired: the modal opens on that item, not on the older one.
    wait_for(&browser, &modal_on("Which branch?")).await;

    // The older one's push, tapped with the page open: the page follows.
    browser
        .goto(&format!("{url}/#item/{older_id}"))
        .await
        .unwrap();
    wait_for(&browser, &modal_on("Which port?")).await;
    tap(&browser, &option("443")).await;
    tap(&browser, "//button[@id='submit']").await;
    let got: Value = serde_json::from_str(&text(&older_call.await.unwrap())).unwrap();
    assert_eq!(got["answers"], json!({"Which port?": "443"}), "{got}");

    // The newer one is what is left.
    wait_for(&browser, &modal_on("Which branch?")).await;
    tap(&browser, &option("develop")).await;
    tap(&browser, "//button[@id='submit']").await;
    let got: Value = serde_json::from_str(&text(&newer_call.await.unwrap())).unwrap();
    assert_eq!(got["answers"], json!({"Which branch?": "develop"}), "{got}");

    for agent in [older, newer] {
        agent.cancel().await.unwrap();
    }
    browser.stop().await;
    drop(daemon);
}
