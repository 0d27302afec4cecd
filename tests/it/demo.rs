//! The scenario the README's and the book's screenshots show, run as a
//! test of what a user sees first: three agents at work in two projects
//! ask at once — a choice, a multi-select, a write their read-only run
//! needs approved — and one inbox holds them, in the order they came,
//! each with its project and session. Answered in turn through the modal,
//! each answer reaches its own run. `scripts/screenshots` copies what this
//! writes to target/screenshots into docs/.

use crate::support::desktop::{Desktop, ENTER};
use crate::support::*;
use serde_json::{Value, json};

fn pdf_library() -> Value {
    json!({
        "question": "Which library should render the invoice PDFs?",
        "header": "PDF library",
        "multiSelect": false,
        "options": [
            {"label": "typst (Recommended)", "description": "Templates as code; fast, no browser to install."},
            {"label": "wkhtmltopdf", "description": "Reuses the HTML email templates; needs a headless browser."},
            {"label": "printpdf", "description": "Draws each page by hand; the most code to write."}
        ]
    })
}

fn checkout_scope() -> Value {
    json!({
        "question": "Which checkout steps should ship in this release?",
        "header": "Scope",
        "multiSelect": true,
        "options": [
            {"label": "Saved cards", "description": "Returning customers pay in one step."},
            {"label": "Apple Pay", "description": "Needs the merchant domain verified first."},
            {"label": "Guest checkout", "description": "No account needed; orders linked by email."}
        ]
    })
}

const INVOICE: &str =
    "pub fn total(subtotal: f64, tax_rate: f64) -> f64 {\n    subtotal * (1.0 + tax_rate)\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn three_agents_ask_at_once_and_each_answer_reaches_its_own_run() {
    let desktop = Desktop::start().await;
    let home = hark_harness::scratch();
    let (payments, web) = (
        home.path().join("payments-api"),
        home.path().join("web-app"),
    );
    std::fs::create_dir_all(payments.join("src")).unwrap();
    std::fs::create_dir_all(&web).unwrap();
    let invoice = payments.join("src/invoice.rs");
    std::fs::write(&invoice, INVOICE).unwrap();
    let (payments, web) = (payments.to_str().unwrap(), web.to_str().unwrap());
    let ask = |q: Value| format!("ASK {}", questions(&[q]));
    let edit = json!({
        "file_path": invoice,
        "old_string": "    subtotal * (1.0 + tax_rate)",
        "new_string": "    (subtotal * (1.0 + tax_rate) * 100.0).round() / 100.0",
    });
    let mut runs = Vec::new();
    for (session, args, prompt) in [
        ("invoice-pdfs", vec![], ask(pdf_library())),
        ("checkout", vec![], ask(checkout_scope())),
        (
            "rounding-fix",
            vec!["--read-only"],
            format!("TOOL Edit {edit}"),
        ),
    ] {
        let cwd = if session == "checkout" { web } else { payments };
        let args = [args, vec!["--cwd", cwd, "--session", session]].concat();
        runs.push(spawn_run(&desktop.sandbox, &args, &prompt));
        // One at a time, so they wait in this order.
        desktop.log.question_id(session);
    }

    // One inbox: three items, oldest first, each with its project.
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.section("waiting").await;
    let pending = desktop.text("#pending").await;
    let at = |text: &str| {
        pending
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} not in {pending}"))
    };
    assert!(at("invoice PDFs") < at("checkout steps") && at("checkout steps") < at("invoice.rs"));
    for project in ["payments-api", "web-app"] {
        assert!(pending.contains(project), "{project} not in {pending}");
    }
    desktop.screenshot("inbox").await;

    // The modal, in turn: Enter opens the selected (oldest) one.
    desktop.keys(ENTER).await;
    desktop.view("modal").await;
    desktop
        .wait_for_question("Which library should render the invoice PDFs?")
        .await;
    desktop.screenshot("modal-single").await;
    desktop.pick("typst (Recommended)").await;
    desktop.click("#submit").await;
    desktop
        .wait_for_question("Which checkout steps should ship in this release?")
        .await;
    desktop.pick("Saved cards").await;
    desktop.pick("Guest checkout").await;
    desktop.screenshot("modal-multiselect").await;
    desktop.click("#submit").await;
    desktop
        .wait_for_question(&format!(
            "The agent wants to edit {}. Allow this write action?",
            invoice.display()
        ))
        .await;
    let preview = desktop.text("#approval-preview").await;
    assert!(preview.contains("+     (subtotal"), "{preview}");
    desktop.screenshot("modal-approval").await;
    desktop.pick("Allow this action only").await;
    desktop.click("#submit").await;

    // Each answer reached its own run, and each run ended well.
    for mut run in runs {
        assert!(run.wait().unwrap().success());
    }
    let listed = hark(&desktop.sandbox, &["runs", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let result = |session: &str| {
        let run = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["session_id"] == session)
            .unwrap_or_else(|| panic!("no run of {session}: {listed}"));
        assert_eq!(run["status"], "finished", "{run}");
        run["result"].as_str().unwrap_or_default().to_owned()
    };
    assert!(result("invoice-pdfs").contains("typst (Recommended)"));
    let scope = result("checkout");
    assert!(
        scope.contains("Saved cards")
            && scope.contains("Guest checkout")
            && !scope.contains("Apple"),
        "{scope}"
    );
    desktop.log.wait_event(
        "machine.write_mode_granted",
        &[("session_id", "rounding-fix"), ("verdict", "allow")],
    );
    desktop.open_inbox();
    desktop.view("inbox").await;
    desktop.section("runs").await;
    desktop
        .wait_for("//table[@id='runs']//tr[td[1][text()='FINISHED'] and contains(., 'typst')]")
        .await;
    desktop.screenshot("inbox-runs").await;
    desktop.stop().await;
}
