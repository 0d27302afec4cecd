//! The desktop app end to end: the real `hark-app` under Xvfb with a private
//! D-Bus session and dunst, driven through tauri-driver + WebKitWebDriver,
//! while real MCP clients ask through `hark mcp-operator-ask`.

use std::process::Command;

use crate::support::desktop::{Desktop, ENTER, ESCAPE};
use crate::support::*;
use fantoccini::Locator;
use serde_json::{Value, json};

/// The multi-select question the desktop tests show, in the screenshots
/// too: worded as an agent would ask it, each option described (the shared
/// [`features`] describes each as "pick X").
fn features_to_ship() -> Value {
    json!({
        "question": "Which features should ship first?",
        "header": "Features",
        "multiSelect": true,
        "options": [
            {"label": "Auth", "description": "Sign-in with the company SSO."},
            {"label": "Billing", "description": "Invoices and card payments."},
            {"label": "Search", "description": "Full-text search over documents."}
        ]
    })
}

/// Starts an `ask` call from a fresh agent; returns the agent and the call.
pub(crate) async fn ask_from_agent(
    desktop: &Desktop,
    session: &str,
    args: Value,
) -> (Agent, tokio::task::JoinHandle<rmcp::model::CallToolResult>) {
    let agent = agent(&desktop.sandbox, &[("HARK_SESSION_ID", session)]).await;
    let peer = agent.peer().clone();
    let call = tokio::spawn(async move {
        let Value::Object(args) = args else {
            unreachable!()
        };
        peer.call_tool(rmcp::model::CallToolRequestParams::new("ask").with_arguments(args))
            .await
            .unwrap()
    });
    (agent, call)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_notification_click_opens_the_modal_on_its_item_and_the_picks_reach_the_agent() {
    let desktop = Desktop::start().await;
    let first = question("Which branch?", "Branch", &["main", "develop"], false);
    let (agent_a, call_a) = ask_from_agent(&desktop, "first", questions(&[first])).await;
    desktop.log.question_id("first");
    let (agent_b, call_b) = ask_from_agent(&desktop, "click-through", questions(&[db()])).await;
    let id = desktop.log.question_id("click-through");
    let notify = desktop.wait_for_notify("Which database?");
    assert!(
        notify.iter().any(|l| l.contains("Database")),
        "the title names the header: {notify:?}"
    );

    // The modal shows the older item until the notification of the newer one is clicked.
    desktop.view("modal").await;
    desktop.wait_for_question("Which branch?").await;
    desktop.click_action(desktop.notification_id(&id), "default");
    desktop.wait_for_question("Which database?").await;
    assert_eq!(desktop.text("#header-chip").await, "Database");
    let options = desktop.text("#options").await;
    assert!(
        options.contains("Postgres (Recommended)") && options.contains("SQLite"),
        "{options}"
    );
    assert!(
        options.contains("pick SQLite"),
        "descriptions are shown: {options}"
    );
    desktop.pick("SQLite").await;
    desktop.click("#submit").await;
    let result = call_b.await.unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);

    desktop.wait_for_question("Which branch?").await;
    desktop.pick("develop").await;
    desktop.click("#submit").await;
    assert_eq!(
        text(&call_a.await.unwrap()),
        r#"{"answers":{"Which branch?":"develop"}}"#
    );
    agent_a.cancel().await.unwrap();
    agent_b.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn multiselect_with_other_text_and_enter_on_the_default() {
    let desktop = Desktop::start().await;
    let (agent, call) =
        ask_from_agent(&desktop, "multi", questions(&[db(), features_to_ship()])).await;
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    assert_eq!(desktop.text("#progress").await, "Question 1 of 2");
    // Enter on the pre-picked default.
    desktop.keys(ENTER).await;
    desktop
        .wait_for_question("Which features should ship first?")
        .await;
    assert_eq!(desktop.text("#progress").await, "Question 2 of 2");
    desktop.keys("1").await; // digit picks Auth
    desktop.keys("3").await; // and Search
    desktop.click("#other-choice").await;
    desktop
        .client
        .find(Locator::Css("#other-text"))
        .await
        .unwrap()
        .send_keys("Audit log")
        .await
        .unwrap();
    desktop.click("#submit").await;

    let result = call.await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        got,
        json!({"answers": {"Which database?": "Postgres (Recommended)", "Which features should ship first?": ["Audit log"]}})
    );
    let settled = desktop
        .log
        .wait_event("operator.question.answered", &[("session_id", "multi")]);
    assert_eq!(settled["outcome"], "answered");
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn digits_pick_several_options_of_a_multiselect() {
    let desktop = Desktop::start().await;
    let (agent, call) = ask_from_agent(&desktop, "digits", questions(&[features_to_ship()])).await;
    desktop.view("modal").await;
    desktop
        .wait_for_question("Which features should ship first?")
        .await;
    desktop.keys("1").await;
    desktop.keys("3").await;
    desktop.keys(ENTER).await;
    let result = call.await.unwrap();
    assert_eq!(
        text(&result),
        r#"{"answers":{"Which features should ship first?":["Auth","Search"]}}"#
    );
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn escape_skips_and_the_agent_is_told() {
    let desktop = Desktop::start().await;
    let (agent, call) = ask_from_agent(&desktop, "skipper", questions(&[db()])).await;
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.keys(ESCAPE).await;
    let result = call.await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).starts_with(NOT_ANSWERED), "{}", text(&result));
    assert!(text(&result).contains("skipped"));
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_item_shows_in_the_inbox_and_the_agent_got_the_error() {
    let desktop = Desktop::start().await;
    let agent = agent(
        &desktop.sandbox,
        &[("HARK_SESSION_ID", "too-late"), ("HARK_ASK_TIMEOUT", "1")],
    )
    .await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (timed out after 1 s; no default was applied)")
    );
    // A second `hark app` brings the running one's inbox forward.
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.section("history").await;
    let row = desktop
        .wait_for("//table[@id='history']//tr[td[1][text()='TIMED OUT']]")
        .await;
    assert!(row.text().await.unwrap().contains("Which database?"));
    // Its session, whose agent (this test's MCP client) is still there.
    desktop.section("sessions").await;
    let session = desktop
        .wait_for("//table[@id='sessions']//tr[@data-session='too-late']")
        .await
        .text()
        .await
        .unwrap();
    for shown in ["ACTIVE", "1 asked, 0 waiting", "last timed out"] {
        assert!(session.contains(shown), "{shown:?} not in {session:?}");
    }
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn three_concurrent_asks_are_answered_in_turn_through_one_modal() {
    let desktop = Desktop::start().await;
    let mut calls = Vec::new();
    for i in 1..=3 {
        let q = question(
            &format!("Deploy service {i}?"),
            "Deploy",
            &["Yes", "No"],
            false,
        );
        let session = format!("queue-{i}");
        let (agent, call) = ask_from_agent(&desktop, &session, questions(&[q])).await;
        desktop.log.question_id(&session); // in order, so the modal shows them in order
        calls.push((agent, call));
    }
    desktop.view("modal").await;
    assert_eq!(
        desktop.client.windows().await.unwrap().len(),
        1,
        "one window, never a pile"
    );
    for i in 1..=3 {
        desktop
            .wait_for_question(&format!("Deploy service {i}?"))
            .await;
        if i == 1 {
            desktop
                .wait_for("//span[@id='queue-count' and text()='3 waiting']")
                .await;
        }
        desktop.pick(if i == 2 { "No" } else { "Yes" }).await;
        desktop.click("#submit").await;
    }
    for (i, (agent, call)) in calls.into_iter().enumerate() {
        let want = if i == 1 { "No" } else { "Yes" };
        let result = call.await.unwrap();
        assert_eq!(
            text(&result),
            format!(r#"{{"answers":{{"Deploy service {}?":"{want}"}}}}"#, i + 1)
        );
        agent.cancel().await.unwrap();
    }
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_notification_button_answers_directly() {
    let desktop = Desktop::start().await;
    let (agent, call) = ask_from_agent(&desktop, "button", questions(&[db()])).await;
    let id = desktop.log.question_id("button");
    let notify = desktop.wait_for_notify("Which database?");
    assert!(
        notify.iter().any(|l| l.contains("\"pick:1\"")),
        "quick-answer actions offered: {notify:?}"
    );
    desktop.click_action(desktop.notification_id(&id), "pick:1");
    let result = call.await.unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);
    let items = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    assert_eq!(items[0]["replied_by"], "notification");
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_item_answered_elsewhere_moves_the_modal_on() {
    let desktop = Desktop::start().await;
    let (agent, call) = ask_from_agent(&desktop, "elsewhere", questions(&[db()])).await;
    let id = desktop.log.question_id("elsewhere");
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    answer(&desktop.sandbox, &id, "SQLite");
    assert_eq!(
        text(&call.await.unwrap()),
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    desktop.wait_for("//p[@id='idle' and not(@hidden)]").await;
    // Its notification has nothing left to offer: the app takes it down.
    desktop.wait_for_close(desktop.notification_id(&id));
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tray_lists_pending_items() {
    let desktop = Desktop::start_with(&[], true).await;
    let (agent_a, call_a) = ask_from_agent(&desktop, "tray-a", questions(&[db()])).await;
    // The second is asked once the first is registered: asked together,
    // the second could arrive first and be the modal's (and the tray's) first.
    desktop.log.question_id("tray-a");
    let (agent_b, call_b) =
        ask_from_agent(&desktop, "tray-b", questions(&[features_to_ship()])).await;
    let updated = desktop.log.wait_for("the tray to list both items", |l| {
        l.contains("tray.updated")
            && l.contains("[Database] Which database?")
            && l.contains("Which features should ship first?")
    });
    let updated: Value = serde_json::from_str(&updated).unwrap();
    assert_eq!(updated["pending"], 2);
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.open_tray_menu();
    desktop.screenshot_screen("tray");
    // The second entry is the second item: choosing it brings the modal to it.
    desktop.press(&["Down", "Down", "Return"]);
    desktop
        .wait_for_question("Which features should ship first?")
        .await;
    for session in ["tray-a", "tray-b"] {
        let out = hark(
            &desktop.sandbox,
            &["skip", &desktop.log.question_id(session)],
        );
        assert!(out.status.success());
    }
    call_a.await.unwrap();
    call_b.await.unwrap();
    desktop.log.wait_until("the tray to empty", |lines| {
        let listed = lines
            .iter()
            .position(|l| l.text.contains("tray.updated") && l.text.contains("\"pending\":2"))?;
        lines[listed..]
            .iter()
            .find(|l| l.text.contains("tray.updated") && l.text.contains("\"pending\":0"))
            .cloned()
    });
    agent_a.cancel().await.unwrap();
    agent_b.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_shows_the_diff_and_action_allows_one_edit_then_asks_again() {
    let desktop = Desktop::start().await;
    let work = hark_harness::scratch();
    let file = work.path().join("lib.rs");
    std::fs::write(&file, "let x = 1;\nlet y = 2;\n").unwrap();
    let edit = |old: &str, new: &str| {
        format!(
            "TOOL Edit {}",
            json!({"file_path": file, "old_string": old, "new_string": new})
        )
    };
    let prompt = [
        edit("let x = 1;", "let x = 10;"),
        edit("let y = 2;", "let y = 20;"),
    ]
    .join("\n");
    let run = spawn_run(
        &desktop.sandbox,
        &["--read-only", "--session", "gate"],
        &prompt,
    );

    let question = format!(
        "The agent wants to edit {}. Allow this write action?",
        file.display()
    );
    desktop.view("modal").await;
    desktop.wait_for_question(&question).await;
    assert_eq!(desktop.text("#header-chip").await, "Approval");
    assert_eq!(desktop.text("#approval-tool").await, "Edit");
    let preview = desktop.text("#approval-preview").await;
    assert!(
        preview.contains("- let x = 1;") && preview.contains("+ let x = 10;"),
        "{preview}"
    );
    let options = desktop.text("#options").await;
    for scope in [
        "Allow for this run (Recommended)",
        "Allow this action only",
        "Allow for this session",
        "Deny",
    ] {
        assert!(options.contains(scope), "{options}");
    }
    desktop.pick("Allow this action only").await;
    desktop.click("#submit").await;
    desktop.log.wait_event(
        "machine.write_mode_granted",
        &[
            ("scope", "action"),
            ("verdict", "allow"),
            ("by", "operator"),
        ],
    );

    // "Action" allowed that edit only: the next one is asked again.
    desktop
        .wait_for("//pre[@id='approval-preview' and contains(., '+ let y = 20;')]")
        .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "let x = 10;\nlet y = 2;\n"
    );
    desktop.keys(ESCAPE).await;
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "let x = 10;\nlet y = 2;\n",
        "Esc denied the second edit"
    );
    let items = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    let mut outcomes: Vec<(String, String)> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["outcome"]["outcome"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                i["replied_by"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            ("approved".to_owned(), "desktop".to_owned()),
            ("denied".to_owned(), "desktop".to_owned())
        ]
    );
    // The inbox lists the run, finished, with what it asked.
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.section("runs").await;
    let run = desktop
        .wait_for("//table[@id='runs']//tr[td[1][text()='FINISHED'] and td[3][starts-with(text(), 'session gate')]]")
        .await;
    let text = run.text().await.unwrap();
    assert!(
        text.contains("2 asked, 0 waiting") && text.contains("exit 0"),
        "{text}"
    );
    desktop.stop().await;
}

/// The app quits, and every waiting agent got its cancellation at once.
async fn quits_cancelling(
    desktop: Desktop,
    waiting: Vec<(Agent, tokio::task::JoinHandle<rmcp::model::CallToolResult>)>,
) {
    desktop
        .log
        .wait_event("quitting: cancelling every pending item", &[]);
    for (agent, call) in waiting {
        assert_eq!(
            text(&call.await.unwrap()),
            format!("{NOT_ANSWERED} (cancelled: hark is shutting down)")
        );
        agent.cancel().await.unwrap();
    }
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminated_app_cancels_every_pending_item_at_once() {
    let desktop = Desktop::start().await;
    let started = desktop.log.wait_event("desktop app started", &[]);
    let pid = started["pid"].as_u64().unwrap().to_string();
    let (agent_a, call_a) = ask_from_agent(&desktop, "term-a", questions(&[db()])).await;
    let (agent_b, call_b) =
        ask_from_agent(&desktop, "term-b", questions(&[features_to_ship()])).await;
    desktop.log.question_id("term-a");
    desktop.log.question_id("term-b");
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    quits_cancelling(desktop, vec![(agent_a, call_a), (agent_b, call_b)]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_external_effect_is_denied_from_its_notification_button() {
    let desktop = Desktop::start().await;
    let push = format!("TOOL Bash {}", json!({"command": "git push origin main"}));
    let run = spawn_run(
        &desktop.sandbox,
        // A bounded wait: were the button not taken, the run ends (denied by the timeout) and the test fails.
        &["--read-only", "--session", "push", "--timeout", "20"],
        &push,
    );
    let id = desktop.log.question_id("push");
    let notify = desktop.wait_for_notify("git push origin main");
    assert!(
        notify.iter().any(|l| l.contains("\"pick:1\""))
            && notify.iter().any(|l| l.contains("\"Deny\""))
            && !notify.iter().any(|l| l.contains("\"pick:2\"")),
        "only this action or deny, as buttons: {notify:?}"
    );
    desktop.click_action(desktop.notification_id(&id), "pick:1");
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("The operator denied this write"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let items = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    assert_eq!(items[0]["outcome"]["outcome"], "denied");
    assert_eq!(items[0]["replied_by"], "notification");
    desktop.stop().await;
}

/// Waits until the tray lists `pending` items with do-not-disturb `dnd`.
fn wait_for_tray(desktop: &Desktop, pending: u64, dnd: bool) {
    desktop.log.wait_until(
        &format!("the tray to list {pending} (dnd {dnd})"),
        |lines| {
            lines.iter().find_map(|l| {
                let event: Value = serde_json::from_str(&l.text).ok()?;
                (event["message"] == "tray.updated"
                    && event["pending"] == pending
                    && event["dnd"] == dnd)
                    .then_some(())
            })
        },
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn quit_from_the_tray_cancels_every_pending_item_at_once() {
    let desktop = Desktop::start_with(&[], true).await;
    let (agent_a, call_a) = ask_from_agent(&desktop, "quit-a", questions(&[db()])).await;
    let (agent_b, call_b) =
        ask_from_agent(&desktop, "quit-b", questions(&[features_to_ship()])).await;
    wait_for_tray(&desktop, 2, false);
    desktop.tray_menu(&["Up", "Return"]);
    // Quitting cancels both: the inbox asks first, and only its answer quits.
    desktop.view("inbox").await;
    let asks = desktop
        .wait_for("//div[@id='quit-ask' and not(@hidden)]")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        asks.contains(
            "2 questions are waiting: their agents will be told that hark is shutting down"
        ),
        "{asks}"
    );
    // The app may be gone before WebDriver answers the click: what it did
    // is told by its log and the agents.
    let confirm = desktop
        .client
        .find(Locator::Css("#quit-confirm"))
        .await
        .unwrap();
    let _ = confirm.click().await;
    quits_cancelling(desktop, vec![(agent_a, call_a), (agent_b, call_b)]).await;
}

/// From do-not-disturb on with nothing waiting: an agent asks ("quiet"),
/// which the tray and the inbox count but nothing notifies; do-not-disturb
/// goes off from the tray and another agent asks ("loud") a short
/// single-select question. Settles both and returns the loud one's `Notify`.
async fn quiet_then_loud(desktop: &Desktop) -> Vec<String> {
    wait_for_tray(desktop, 0, true);
    let (agent_a, call_a) = ask_from_agent(desktop, "quiet", questions(&[db()])).await;
    let quiet = desktop.log.question_id("quiet");
    wait_for_tray(desktop, 1, true);
    let listed = hark(&desktop.sandbox, &["inbox", "--json"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(&quiet),
        "the inbox still fills"
    );

    // Off again: the next question notifies. Had the first one notified, its
    // Notify would be on the bus before this one's.
    desktop.tray_menu(&["Up", "Up", "Return"]);
    wait_for_tray(desktop, 1, false);
    let branch = question("Which branch?", "Branch", &["main", "develop"], false);
    let (agent_b, call_b) = ask_from_agent(desktop, "loud", questions(&[branch])).await;
    let call = desktop.wait_for_notify("Which branch?");
    assert!(
        !desktop
            .notifications
            .all()
            .iter()
            .any(|l| l.contains("Which database?")),
        "no notification while do-not-disturb was on"
    );
    for id in [quiet, desktop.log.question_id("loud")] {
        assert!(hark(&desktop.sandbox, &["skip", &id]).status.success());
    }
    call_a.await.unwrap();
    call_b.await.unwrap();
    agent_a.cancel().await.unwrap();
    agent_b.cancel().await.unwrap();
    call
}

#[tokio::test(flavor = "multi_thread")]
async fn do_not_disturb_silences_notifications_but_not_the_inbox() {
    let desktop = Desktop::start_with(&[], true).await;
    // The menu: "Nothing is waiting", Open inbox, Start at login, Do not disturb, Quit.
    desktop.tray_menu(&["Up", "Up", "Return"]);
    let call = quiet_then_loud(&desktop).await;
    // By default a short single-select question can be answered from it.
    assert!(call.iter().any(|l| l.contains("pick:")), "{call:?}");
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_sets_how_new_items_are_announced() {
    let config = tempfile::tempdir().unwrap();
    let path = config.path().join("config.toml");
    std::fs::write(
        &path,
        "[notifications]\ndo_not_disturb = true\nbuttons = false\nurgency = \"critical\"\n",
    )
    .unwrap();
    let desktop = Desktop::start_with(&[("HARK_CONFIG", path.to_str().unwrap())], true).await;
    // Silenced from the start (no tray toggle), then: critical, no buttons.
    let call = quiet_then_loud(&desktop).await.join("\n");
    assert!(
        call.contains(r#"string "default""#),
        "it opens the modal: {call}"
    );
    assert!(!call.contains("pick:"), "no answer buttons: {call}");
    let urgency = call.find(r#"string "urgency""#).expect("an urgency hint");
    assert!(
        call[urgency..].lines().nth(1).unwrap().ends_with("byte 2"),
        "critical: {call}"
    );
    desktop.stop().await;
}

#[test]
fn without_a_display_hark_app_says_so_and_points_to_the_terminal() {
    let out = sandbox()
        .hark(["app"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(
        stderr.contains("hark serve --prompter terminal"),
        "{stderr}"
    );
}

/// The app, with `env`, whose runs start the fake agent (the configured
/// one), showing the inbox and its New run form.
pub(crate) async fn inbox_with_the_fake_agent(env: &[(&str, &str)]) -> Desktop {
    let desktop = Desktop::start_with(env, false).await;
    std::fs::write(
        desktop.sandbox.config(),
        format!(
            "agent_command = {:?}\n",
            fake_claude().display().to_string()
        ),
    )
    .unwrap();
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.section("new-run").await;
    desktop
}

/// The id of the run the app just dispatched.
pub(crate) fn dispatched(desktop: &Desktop) -> String {
    desktop.log.wait_event("run dispatched", &[])["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits for the dispatched run to end, and checks it exited 0.
pub(crate) fn ended_well(desktop: &Desktop, run_id: &str) {
    let ended = desktop
        .log
        .wait_event("dispatched run ended", &[("run_id", run_id)]);
    assert_eq!(ended["exit_code"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_dispatched_from_the_inbox_asks_through_the_modal_and_is_recorded() {
    let desktop = inbox_with_the_fake_agent(&[]).await;
    let work = hark_harness::scratch();
    desktop.fill("#dispatch-prompt", &ask_line()).await;
    desktop
        .fill("#dispatch-cwd", work.path().to_str().unwrap())
        .await;
    desktop.fill("#dispatch-session", "from-the-app").await;
    desktop.keys(ENTER).await;
    let run_id = dispatched(&desktop);
    desktop
        .wait_for(&format!(
            "//span[@id='dispatch-status' and starts-with(text(), 'Run {}')]",
            &run_id[..8]
        ))
        .await;

    // The agent's question reaches the modal, and the answer the agent.
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.pick("SQLite").await;
    desktop.click("#submit").await;
    ended_well(&desktop, &run_id);
    let runs = hark(&desktop.sandbox, &["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["id"], run_id.as_str());
    assert_eq!(runs[0]["session_id"], "from-the-app");
    assert_eq!(runs[0]["cwd"], work.path().to_str().unwrap());
    assert_eq!(runs[0]["status"], "finished");
    assert_eq!(
        runs[0]["result"],
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );

    // The inbox's Runs table shows it finished, with its result.
    desktop.view("inbox").await;
    desktop.section("runs").await;
    desktop
        .wait_for("//table[@id='runs']//tr[td[1][text()='FINISHED'] and contains(., 'SQLite')]")
        .await;

    // What the run printed is there too, for the runs the app started.
    desktop
        .client
        .find(Locator::XPath(
            "//table[@id='runs']//tr[td[1][text()='FINISHED']]//button[text()='Output']",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let output = desktop
        .wait_for("//pre[@id='run-output' and contains(., 'the operator is attached')]")
        .await;
    assert!(
        output
            .text()
            .await
            .unwrap()
            .contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "the agent's result is in the output"
    );
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_from_the_inbox_takes_each_next_message_in_the_modal() {
    let desktop = inbox_with_the_fake_agent(&[]).await;
    desktop.fill("#dispatch-prompt", "SAY first turn").await;
    desktop.fill("#dispatch-session", "talk").await;
    desktop
        .client
        .find(Locator::Css("#dispatch-verb"))
        .await
        .unwrap()
        .select_by_value("converse")
        .await
        .unwrap();
    desktop.click("#dispatch-start").await;
    let run_id = dispatched(&desktop);

    // The agent's reply, and the operator's next message typed as "Other".
    desktop.view("modal").await;
    desktop
        .wait_for_question("The agent said: first turn\n\nYour next message to the agent?")
        .await;
    // The tray lists the turn by what it asks, on one line.
    desktop.log.wait_for("the tray to list the turn", |l| {
        l.contains("tray.updated") && l.contains("[Converse] Your next message to the agent?")
    });
    desktop.keys("3").await; // the third choice is Other, and focuses its text
    desktop.keys("SAY second turn").await;
    desktop.keys(ENTER).await;
    // Enter on the next one takes its default: the conversation ends.
    desktop
        .wait_for_question("The agent said: second turn\n\nYour next message to the agent?")
        .await;
    desktop.keys(ENTER).await;

    ended_well(&desktop, &run_id);
    let runs = hark(&desktop.sandbox, &["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "finished");
    assert_eq!(runs[0]["items"], 2);
    assert_eq!(runs[0]["result"], "second turn");
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dispatched_run_gets_the_environment_the_app_was_started_with() {
    let work = hark_harness::scratch();
    let log = work.path().join("fake.log");
    // The user's own setting of one of the app's rendering variables.
    let desktop = inbox_with_the_fake_agent(&[
        ("FAKE_CLAUDE_LOG", log.to_str().unwrap()),
        ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null"),
    ])
    .await;
    desktop.fill("#dispatch-prompt", "SAY hello").await;
    desktop.click("#dispatch-start").await;
    let run_id = dispatched(&desktop);
    ended_well(&desktop, &run_id);
    let runs = invocations(&log);
    assert_eq!(runs.len(), 1);
    let env = runs[0]["env"].as_object().unwrap();
    // What the app set for itself stays in the app; the user's own passes on.
    for set_by_the_app in [
        "WEBKIT_DISABLE_COMPOSITING_MODE",
        "WEBKIT_DISABLE_DMABUF_RENDERER",
        "GDK_GL",
        "JSC_useJIT",
        "MALLOC_ARENA_MAX",
    ] {
        assert!(
            !env.contains_key(set_by_the_app),
            "{set_by_the_app}: {env:?}"
        );
    }
    assert_eq!(env["WEBKIT_WEB_RENDER_DEVICE_FILE"], "/dev/null");
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_intake_from_the_new_run_form_is_asked_in_the_modal_before_the_agent_starts() {
    let work = hark_harness::scratch();
    let log = work.path().join("fake.log");
    let desktop = inbox_with_the_fake_agent(&[("FAKE_CLAUDE_LOG", log.to_str().unwrap())]).await;
    let intake = json!({
        "preamble": "Release checklist.",
        "questions": [{"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
            "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}]
    });
    desktop.fill("#dispatch-prompt", "SAY shipping").await;
    desktop.fill("#dispatch-intake", &intake.to_string()).await;
    desktop.click("#dispatch-start").await;
    let run_id = dispatched(&desktop);

    // The intake comes first, in the modal; the agent has not started yet.
    desktop.view("modal").await;
    desktop.wait_for_question("Which environment?").await;
    assert!(
        invocations(&log).is_empty(),
        "the agent waits for the intake"
    );
    desktop.pick("Production").await;
    desktop.click("#submit").await;
    ended_well(&desktop, &run_id);
    let runs = invocations(&log);
    assert_eq!(runs.len(), 1);
    let prompt = flag(&runs[0], "-p").unwrap();
    assert!(
        prompt.contains("Release checklist.") && prompt.contains("(env): prod"),
        "the answers are in the prompt: {prompt}"
    );
    assert!(prompt.ends_with("SAY shipping"), "{prompt}");
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_is_told_in_the_tray_and_the_inbox_and_the_question_still_answered() {
    // The app's store on a small disk of its own (dropped after it unmounts).
    let data = tempfile::tempdir().unwrap();
    let Some(disk) = crate::store::Tmpfs::mount(data.path()) else {
        return;
    };
    let dir = data.path().display().to_string();
    let desktop = Desktop::start_with(&[("HARK_DATA_DIR", &dir)], true).await;
    let filler = disk.fill();
    let (agent, call) = ask_from_agent(&desktop, "full-disk", questions(&[db()])).await;
    let id = desktop.log.question_id("full-disk");
    desktop.log.wait_for("the tray to warn", |l| {
        l.contains("tray.updated")
            && l.contains("The store cannot be written (database or disk is full)")
    });
    desktop.open_inbox();
    desktop.view("inbox").await;
    let banner = desktop
        .wait_for("//p[@id='store-warning' and not(@hidden)]")
        .await
        .text()
        .await
        .unwrap();
    let says = format!("The store {dir}/hark.db cannot be written: database or disk is full");
    assert!(banner.contains(&says), "{banner}");
    desktop
        .wait_for(&format!("//table[@id='pending']//tr[@data-id='{id}']"))
        .await;
    desktop.screenshot("store-failing").await;

    answer(&desktop.sandbox, &id, "SQLite");
    let result = call.await.unwrap();
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);

    // The disk frees: the next look records what was held, and the banner goes.
    std::fs::remove_file(filler).unwrap();
    assert!(hark(&desktop.sandbox, &["inbox"]).stderr.is_empty());
    desktop
        .wait_for("//p[@id='store-warning' and @hidden]")
        .await;
    agent.cancel().await.unwrap();
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parked_question_says_so_everywhere_and_its_answer_in_the_modal_resumes_the_run() {
    let desktop = Desktop::start_with(&[], true).await;
    // Nobody answers in the run's 1 s wait: the item parks, the agent pauses.
    let run = spawn_run(
        &desktop.sandbox,
        &["--session", "parked-desk", "--timeout", "1"],
        &ask_line(),
    );
    let parked = desktop
        .log
        .wait_event("operator.question.parked", &[("session_id", "parked-desk")]);
    let id = parked["question_id"].as_str().unwrap().to_owned();

    // The modal kept the item, and now says that its agent is paused and
    // how long it has waited, not a countdown.
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    desktop.wait_for("//p[@id='parked' and not(@hidden)]").await;
    assert_eq!(
        desktop.text("#parked").await,
        "Parked — the agent is paused until you answer"
    );
    let waited = desktop
        .wait_for("//span[@id='time-left' and starts-with(text(), 'waited ')]")
        .await;
    assert!(!waited.text().await.unwrap().contains("left"));
    // The tray counts it as parked, its menu entry says so, and its
    // notification was replaced by one that says so.
    let tray = desktop
        .log
        .wait_until("the tray to count it parked", |lines| {
            lines.iter().find_map(|l| {
                let event: Value = serde_json::from_str(&l.text).ok()?;
                (event["message"] == "tray.updated" && event["parked"] == 1).then_some(event)
            })
        });
    assert_eq!(tray["tooltip"], "hark — 1 question waiting (1 parked)");
    assert!(
        tray["items"]
            .as_str()
            .unwrap()
            .contains("[Database] Which database? — claude in "),
        "the tray names who asks: {tray}"
    );
    assert!(
        tray["items"].as_str().unwrap().contains(" (parked)"),
        "{tray}"
    );
    desktop.wait_for_notify("Parked: Which database? — the agent is paused until you answer");

    // The inbox marks it too; its Answer button brings the modal back to it.
    desktop.open_inbox();
    desktop.view("inbox").await;
    let row = desktop
        .wait_for(&format!(
            "//table[@id='pending']//tr[@data-id='{id}' and td[1][text()='PARKED']]"
        ))
        .await;
    let text = row.text().await.unwrap();
    assert!(text.contains("parked · waiting "), "{text}");
    assert!(
        text.contains("Cancel the run"),
        "a parked run can be ended: {text}"
    );
    desktop
        .client
        .find(Locator::XPath(&format!(
            "//table[@id='pending']//tr[@data-id='{id}']//button[text()='Answer']"
        )))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;

    // Answered as a pending one is: the run resumes with exactly that answer.
    desktop.pick("SQLite").await;
    desktop.click("#submit").await;
    let out = run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "the resumed agent received exactly the answer: {stdout}"
    );
    let items = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    assert_eq!(items[0]["outcome"]["outcome"], "answered");
    assert_eq!(items[0]["replied_by"], "desktop");
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parked_run_cancelled_from_the_modal_ends_without_resuming_its_agent() {
    let desktop = Desktop::start_with(&[], true).await;
    let run = spawn_run(
        &desktop.sandbox,
        &["--session", "cancel-desk", "--timeout", "1"],
        &ask_line(),
    );
    desktop
        .log
        .wait_event("operator.question.parked", &[("session_id", "cancel-desk")]);
    desktop.view("modal").await;
    desktop.wait_for_question("Which database?").await;
    // Only a parked item offers it.
    desktop
        .wait_for("//button[@id='cancel-run' and not(@hidden)]")
        .await;
    desktop.click("#cancel-run").await;
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the operator cancelled the run"),
        "{stderr}"
    );
    assert!(!stderr.contains("resuming the agent"), "{stderr}");
    let items = hark(&desktop.sandbox, &["inbox", "--all", "--json"]);
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    assert_eq!(items[0]["outcome"]["outcome"], "cancelled");
    assert_eq!(items[0]["replied_by"], "desktop");
    desktop.stop().await;
}
