//! The operator-ask bridge end to end: an MCP client spawns the real
//! `hark mcp-operator-ask`, which carries the call to a real `hark serve`
//! with a scripted prompter over a unix socket in a temp dir.

use std::io::Write;
use std::process::Stdio;

use crate::support::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_shows_ask_with_the_askuserquestion_schema() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[]).await;
    let info = agent.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "operator");
    let tools = agent.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "ask");
    let schema = Value::Object((*tools[0].input_schema).clone());
    let qs = &schema["properties"]["questions"];
    assert_eq!(qs["minItems"], 1);
    assert_eq!(qs["maxItems"], 4);
    assert_eq!(
        qs["items"]["required"],
        json!(["question", "header", "options", "multiSelect"])
    );
    assert_eq!(qs["items"]["properties"]["options"]["minItems"], 2);
    assert_eq!(qs["items"]["properties"]["options"]["maxItems"], 4);
    assert_eq!(
        qs["items"]["properties"]["options"]["items"]["required"],
        json!(["label", "description"])
    );
    assert_eq!(qs["items"]["properties"]["multiSelect"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["questions"]));
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_come_back_in_askuserquestion_shape() {
    let daemon = serve(json!({
        "Which database?": "SQLite",
        "Which features?": ["Auth (Recommended)", "Search"],
        "Project name?": {"text": "falcon"},
    }));
    let agent = agent(&daemon.sandbox, &[]).await;

    let single = ask(&agent, questions(&[db()])).await;
    assert_eq!(single.is_error, Some(false));
    assert_eq!(text(&single), r#"{"answers":{"Which database?":"SQLite"}}"#);

    let multi = ask(&agent, questions(&[features()])).await;
    assert_eq!(
        text(&multi),
        r#"{"answers":{"Which features?":["Auth (Recommended)","Search"]}}"#
    );

    let name = question("Project name?", "Name", &["hawk", "owl"], false);
    let free = ask(&agent, questions(&[name])).await;
    assert_eq!(text(&free), r#"{"answers":{"Project name?":"falcon"}}"#);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preview_validates_and_the_operators_note_comes_back_in_annotations() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "noted")]).await;
    let mut asked = db();
    asked["options"][1]["preview"] = json!("```sql\nCREATE TABLE t (id INTEGER);\n```");
    let call = tokio::spawn(async move {
        let result = ask(&agent, questions(&[asked])).await;
        agent.cancel().await.unwrap();
        result
    });
    let id = daemon.log.question_id("noted");
    let listed = inbox(&daemon.sandbox);
    assert_eq!(
        listed[0]["request"]["questions"][0]["options"][1]["preview"],
        "```sql\nCREATE TABLE t (id INTEGER);\n```"
    );
    succeed(
        &daemon.sandbox,
        &[
            "answer",
            &id,
            "--pick",
            "SQLite",
            "--note",
            "keep it in one file",
        ],
    );
    let result = call.await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        got,
        json!({
            "answers": {"Which database?": "SQLite"},
            "annotations": {"Which database?": {
                "preview": "```sql\nCREATE TABLE t (id INTEGER);\n```",
                "notes": "keep it in one file"
            }}
        })
    );
    // Kept with the item: the history shows the note.
    let settled = inbox(&daemon.sandbox);
    assert_eq!(
        settled[0]["outcome"]["annotations"]["Which database?"]["notes"],
        "keep it in one file"
    );
    let history = hark(&daemon.sandbox, &["inbox", "--all"]);
    assert!(
        String::from_utf8_lossy(&history.stdout)
            .contains("note on Which database?: keep it in one file"),
        "{}",
        String::from_utf8_lossy(&history.stdout)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preview_that_is_not_a_short_string_is_refused_with_its_path() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[]).await;
    let mut numbered = db();
    numbered["options"][0]["preview"] = json!(7);
    let refused = ask(&agent, questions(&[numbered])).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("questions[0].options[0].preview: must be a string, got a number"),
        "{}",
        text(&refused)
    );
    let mut long = db();
    long["options"][0]["preview"] = json!("p".repeat(40 * 1024));
    let refused = ask(&agent, questions(&[long])).await;
    assert!(
        text(&refused).contains("questions[0].options[0].preview: must be at most 32768 bytes"),
        "{}",
        text(&refused)
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_omitted_question_takes_its_default_and_an_empty_multiselect_means_none() {
    let daemon = serve(json!({"Which features?": []}));
    let agent = agent(&daemon.sandbox, &[]).await;
    let result = ask(&agent, questions(&[db(), features()])).await;
    assert_eq!(result.is_error, Some(false));
    let got: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        got,
        json!({"answers": {"Which database?": "Postgres (Recommended)", "Which features?": []}})
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skip_is_a_tool_error_naming_the_unconfirmed_defaults() {
    let daemon = serve(json!({"Which database?": {"skip": true}}));
    let agent = agent(&daemon.sandbox, &[]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!(
            "{NOT_ANSWERED} (the operator skipped this question; proceed on your own judgement; \
             the pre-picked defaults were NOT confirmed: {{\"Which database?\":\"Postgres (Recommended)\"}})"
        )
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_question_times_out_with_the_exact_error() {
    let daemon = serve_with(json!({}), &["--ask-timeout", "0.3"]);
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "timeout-session")]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (timed out after 0.3 s; no default was applied)")
    );
    let event = daemon.log.wait_event(
        "operator.question.unanswered",
        &[("session_id", "timeout-session")],
    );
    assert_eq!(event["outcome"], "timed_out");
    assert!(event["duration_ms"].as_u64().unwrap() >= 300);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_per_call_timeout_overrides_the_daemon_default() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[("HARK_ASK_TIMEOUT", "0.2")]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (timed out after 0.2 s; no default was applied)")
    );
    agent.cancel().await.unwrap();
}

/// How long a question waits: the wait its asker was given (`hark ask
/// --timeout`, `HARK_ASK_TIMEOUT` from whoever started the agent) stands;
/// an asker given none leaves it to the daemon, whose `--ask-timeout` wins
/// over the config the two share.
#[tokio::test(flavor = "multi_thread")]
async fn an_asker_given_no_timeout_leaves_the_wait_to_the_daemons_ask_timeout() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "ask_timeout_secs = 300\n").unwrap();
    let daemon = serve_in(&sandbox, json!({}), &["--ask-timeout", "1"]);
    let file = sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    let hark_ask = |session: &str, extra: &[&str]| {
        sandbox
            .hark(["ask", "--session", session, "--file"])
            .arg(&file)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let filed_with = |session: &str| {
        daemon
            .log
            .wait_event("operator.question.asked", &[("session_id", session)])["timeout_ms"]
            .clone()
    };

    let plain = hark_ask("plain", &[]);
    assert_eq!(
        filed_with("plain"),
        1000,
        "the daemon's --ask-timeout, not the client's config"
    );
    let out = plain.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["outcome"], "timed_out");

    let given = hark_ask("given", &["--timeout", "0.5"]);
    assert_eq!(filed_with("given"), 500, "the asker's own --timeout");
    assert_eq!(given.wait_with_output().unwrap().status.code(), Some(3));

    let plain_agent = agent(&sandbox, &[("HARK_SESSION_ID", "mcp-plain")]).await;
    let result = ask(&plain_agent, questions(&[db()])).await;
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (timed out after 1 s; no default was applied)")
    );
    assert_eq!(filed_with("mcp-plain"), 1000);
    plain_agent.cancel().await.unwrap();

    let given_agent = agent(
        &sandbox,
        &[
            ("HARK_SESSION_ID", "mcp-given"),
            ("HARK_ASK_TIMEOUT", "0.5"),
        ],
    )
    .await;
    ask(&given_agent, questions(&[db()])).await;
    assert_eq!(filed_with("mcp-given"), 500);
    given_agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn no_operator_running_is_an_error_at_once() {
    let agent = agent(&sandbox(), &[]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!(
            "{NOT_ANSWERED} (no operator is attached (hark is not running); decide on your own judgement)"
        )
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_calls_list_their_issues_and_the_daemon_keeps_serving() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let agent = agent(&daemon.sandbox, &[]).await;
    let five: Vec<Value> = (0..5)
        .map(|i| question(&format!("Q{i}?"), "H", &["A", "B"], false))
        .collect();
    let huge = "x".repeat(2 << 20);
    let cases = [
        (
            questions(&[]),
            vec!["questions: must hold 1–4 questions, got 0"],
        ),
        (
            questions(&five),
            vec!["questions: must hold 1–4 questions, got 5"],
        ),
        (
            questions(&[question("Q?", "H", &["only"], false)]),
            vec!["questions[0].options: must hold 2–4 options, got 1"],
        ),
        (
            questions(&[question("Q?", "Thirteen char", &["A", "B"], false)]),
            vec!["questions[0].header: must be at most 12 characters, got 13"],
        ),
        (
            questions(&[db(), db()]),
            vec!["questions[1].question: duplicates an earlier question's text"],
        ),
        (
            json!({"questions": [{"question": 7, "header": ["H"], "options": [{"label": "A"}, {"label": false}], "multiSelect": "no"}]}),
            vec![
                "questions[0].question: must be a string, got a number",
                "questions[0].header: must be a string, got an array",
                "questions[0].multiSelect: must be a boolean, got a string",
                "questions[0].options[1].label: must be a string, got a boolean",
            ],
        ),
        (
            json!({"questions": "Which database?"}),
            vec!["questions: must be an array, got a string"],
        ),
        (
            questions(&[question(&format!("{huge}?"), "Big", &["A", "B"], false)]),
            // Refused by its weight before the frame cap is reached: an
            // ask must travel whole, answered, in one frame.
            vec!["more than the 655360 an ask may"],
        ),
    ];
    for (args, expected) in cases {
        let result = ask(&agent, args).await;
        assert_eq!(result.is_error, Some(true));
        let message = text(&result);
        assert!(message.starts_with("invalid ask call"), "{message}");
        for want in expected {
            assert!(message.contains(want), "expected {want:?} in:\n{message}");
        }
    }
    // Nothing was parked for a person, and the daemon still answers.
    assert!(
        !daemon
            .log
            .all()
            .iter()
            .any(|l| l.contains("operator.question.asked"))
    );
    let ok = ask(&agent, questions(&[db()])).await;
    assert_eq!(text(&ok), r#"{"answers":{"Which database?":"SQLite"}}"#);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_refuses_oversized_and_malformed_frames_and_keeps_serving() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixStream;
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let exchange = |bytes: &[u8]| -> Value {
        let mut stream = UnixStream::connect(daemon.sandbox.socket()).unwrap();
        // The daemon may answer and hang up before it has read everything.
        let _ = stream.write_all(bytes);
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let mut big = br#"{"type":"ask","request":{"questions":[]},"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 2 << 20));
    big.extend(b"\"}\n");
    let refused = exchange(&big);
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "frame_too_large");

    let garbage = exchange(b"{not json\n");
    assert_eq!(garbage["code"], "bad_frame");

    let invalid = exchange(
        &[
            serde_json::to_vec(&json!({"type": "ask", "request": {"questions": []}})).unwrap(),
            b"\n".to_vec(),
        ]
        .concat(),
    );
    assert_eq!(invalid["code"], "invalid");
    assert_eq!(invalid["issues"][0]["path"], "questions");

    let frame = json!({"type": "ask", "session_id": "raw", "request": questions(&[db()])});
    let mut stream = UnixStream::connect(daemon.sandbox.socket()).unwrap();
    stream.write_all(format!("{frame}\n").as_bytes()).unwrap();
    let mut lines = BufReader::new(stream).lines();
    let accepted: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(accepted["type"], "accepted");
    let settled: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(settled["type"], "settled");
    assert_eq!(
        settled["outcome"],
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_cancellation_cancels_the_pending_item() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "cancel-me")]).await;
    let handle = ask_cancellable(&agent, questions(&[db()])).await;
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "cancel-me")]);
    handle
        .cancel(Some("the user pressed Esc".into()))
        .await
        .unwrap();
    let event = daemon.log.wait_event(
        "operator.question.unanswered",
        &[("session_id", "cancel-me")],
    );
    assert_eq!(event["outcome"], "cancelled");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vanished_agent_cancels_its_item() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "vanishing")]).await;
    let _handle = ask_cancellable(&agent, questions(&[db()])).await;
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "vanishing")]);
    agent.cancel().await.unwrap(); // closes stdin: the MCP server exits and hangs up
    let event = daemon.log.wait_event(
        "operator.question.unanswered",
        &[("session_id", "vanishing")],
    );
    assert_eq!(event["outcome"], "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_notifications_flow_while_the_operator_thinks() {
    let daemon = serve(json!({"Which database?": {"delay_ms": 700, "answer": "SQLite"}}));
    let agent = agent(&daemon.sandbox, &[("HARK_PROGRESS_INTERVAL_MS", "100")]).await;
    let result = ask(&agent, questions(&[db()])).await;
    assert_eq!(text(&result), r#"{"answers":{"Which database?":"SQLite"}}"#);
    let progress = agent.service().progress.lock().unwrap().clone();
    assert!(!progress.is_empty(), "no progress notification arrived");
    assert!(
        progress[0].starts_with("waiting for the operator"),
        "{progress:?}"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_agents_each_get_their_own_answer() {
    let script: serde_json::Map<String, Value> = (0..50)
        .map(|i| {
            (
                format!("Question {i}?"),
                json!({"text": format!("answer {i}")}),
            )
        })
        .collect();
    let daemon = serve(Value::Object(script));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let sandbox = daemon.sandbox.clone();
        tasks.spawn(async move {
            let agent = agent(&sandbox, &[]).await;
            let q = question(&format!("Question {i}?"), "Many", &["A", "B"], false);
            let result = ask(&agent, questions(&[q])).await;
            agent.cancel().await.unwrap();
            (i, text(&result))
        });
    }
    let mut seen = 0;
    while let Some(joined) = tasks.join_next().await {
        let (i, got) = joined.unwrap();
        assert_eq!(
            got,
            format!(r#"{{"answers":{{"Question {i}?":"answer {i}"}}}}"#)
        );
        seen += 1;
    }
    assert_eq!(seen, 50);
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_events_carry_their_fields() {
    let daemon = serve(json!({"Which database?": "SQLite", "Which features?": ["Billing"]}));
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "traced")]).await;
    ask(&agent, questions(&[db(), features()])).await;
    let asked = daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "traced")]);
    let answered = daemon
        .log
        .wait_event("operator.question.answered", &[("session_id", "traced")]);
    for event in [&asked, &answered] {
        for field in [
            "question_id",
            "session_id",
            "headers",
            "duration_ms",
            "outcome",
        ] {
            assert!(!event[field].is_null(), "{field} missing from {event}");
        }
        assert_eq!(event["headers"], "Database, Features");
    }
    assert_eq!(asked["question_id"], answered["question_id"]);
    assert_eq!(answered["outcome"], "answered");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn shutting_down_settles_pending_items_as_cancelled_at_once() {
    let daemon = serve(json!({}));
    let agent = agent(&daemon.sandbox, &[("HARK_SESSION_ID", "shutdown")]).await;
    let pending = tokio::spawn({
        let peer = agent.peer().clone();
        async move {
            let q = questions(&[db()]);
            let Value::Object(args) = q else {
                unreachable!()
            };
            peer.call_tool(rmcp::model::CallToolRequestParams::new("ask").with_arguments(args))
                .await
                .unwrap()
        }
    });
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "shutdown")]);
    daemon.terminate().unwrap();
    let result = pending.await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!("{NOT_ANSWERED} (cancelled: hark is shutting down)")
    );
    assert!(
        !daemon.sandbox.socket().exists() || {
            daemon.log.wait_for("the daemon to exit", |l| {
                l.contains("hark is shutting down")
            });
            true
        }
    );
    agent.cancel().await.unwrap();
}

#[test]
fn hark_ask_reports_outcomes_with_exit_codes() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let file = daemon.sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    let run = |sandbox: &Sandbox, extra: &[&str]| {
        sandbox
            .hark(["ask", "--file"])
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    let answered = run(&daemon.sandbox, &[]);
    assert_eq!(answered.status.code(), Some(0));
    let out: Value = serde_json::from_slice(&answered.stdout).unwrap();
    assert_eq!(
        out,
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
    );

    let nobody = run(&sandbox(), &["--no-wait"]);
    assert_eq!(nobody.status.code(), Some(3));
    let out: Value = serde_json::from_slice(&nobody.stdout).unwrap();
    assert_eq!(out["outcome"], "not_answered");

    std::fs::write(&file, r#"{"questions":[]}"#).unwrap();
    let invalid = run(&daemon.sandbox, &[]);
    assert_eq!(invalid.status.code(), Some(2));
    let out: Value = serde_json::from_slice(&invalid.stdout).unwrap();
    assert_eq!(out["outcome"], "invalid");
    assert_eq!(out["issues"][0]["path"], "questions");

    std::fs::write(&file, "questions: none").unwrap();
    let not_json = run(&daemon.sandbox, &[]);
    assert_eq!(not_json.status.code(), Some(2));
    let out: Value = serde_json::from_slice(&not_json.stdout).unwrap();
    assert_eq!(out["outcome"], "invalid");
    let message = out["issues"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("not JSON: "), "{out}");
    let said = String::from_utf8_lossy(&not_json.stderr);
    assert!(
        said.contains("cannot read") && said.contains(message),
        "{said}"
    );
}

#[test]
fn hark_ask_times_out_with_exit_3() {
    let daemon = serve(json!({}));
    let file = daemon.sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    let out = daemon
        .sandbox
        .hark(["ask", "--timeout", "0.2", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["outcome"], "timed_out");
}

#[test]
fn mcp_config_names_this_harks_server_binary() {
    let out = hark(&sandbox(), &["mcp-config"]);
    assert!(out.status.success());
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &config["mcpServers"]["operator"];
    assert_eq!(server["args"], json!(["mcp-operator-ask"]));
    let command = std::path::PathBuf::from(server["command"].as_str().unwrap());
    assert!(command.is_absolute());
    assert_eq!(
        command.canonicalize().unwrap(),
        bin_dir().join("hark-ask").canonicalize().unwrap()
    );
}

#[test]
fn mcp_config_for_the_other_clients_names_this_hark_and_says_where_it_goes() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "ask_timeout_secs = 120\n").unwrap();
    // `hark-ask`, the server's own binary, built beside `hark`.
    let this_hark = bin_dir().join("hark-ask").canonicalize().unwrap();
    let command = |value: &Value| {
        std::path::Path::new(value.as_str().unwrap())
            .canonicalize()
            .unwrap()
    };
    for (client, file) in [
        ("cursor", ".cursor/mcp.json"),
        ("gemini", "settings.json"),
        ("opencode", "opencode.json"),
        ("vscode", ".vscode/mcp.json"),
    ] {
        let out = succeed(&sandbox, &["mcp-config", "--for", client]);
        let config: Value = serde_json::from_slice(&out.stdout).unwrap();
        let server = [
            &config["mcpServers"]["operator"],
            &config["servers"]["operator"],
            &config["mcp"]["operator"],
        ]
        .into_iter()
        .find(|s| !s.is_null())
        .unwrap_or_else(|| panic!("{client}: {config}"));
        let named = match &server["command"] {
            Value::Array(words) => {
                assert_eq!(words[1], "mcp-operator-ask", "{client}");
                command(&words[0])
            }
            one => {
                assert_eq!(server["args"], json!(["mcp-operator-ask"]), "{client}");
                command(one)
            }
        };
        assert_eq!(named, this_hark, "{client}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(file) && said.contains("note:"),
            "{client}: {said}"
        );
    }
    let gemini = succeed(&sandbox, &["mcp-config", "--for", "gemini"]);
    let gemini: Value = serde_json::from_slice(&gemini.stdout).unwrap();
    assert_eq!(
        gemini["mcpServers"]["operator"]["timeout"], 180_000,
        "above the 120 s wait"
    );
    let goose = succeed(&sandbox, &["mcp-config", "--for", "goose"]);
    let goose = String::from_utf8_lossy(&goose.stdout);
    assert!(
        goose.starts_with("extensions:\n  operator:\n") && goose.contains("    timeout: 180\n"),
        "{goose}"
    );
    let refused = hark(&sandbox, &["mcp-config", "--for", "gemini", "--park-hook"]);
    assert!(!refused.status.success());
}

#[test]
fn mcp_config_for_codex_gives_exec_its_overrides_with_the_cut_above_the_wait() {
    let sandbox = sandbox();
    std::fs::write(sandbox.config(), "ask_timeout_secs = 120\n").unwrap();
    let out = succeed(&sandbox, &["mcp-config", "--for", "codex"]);
    let words: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    // `-c` before each override, one word a line (for `mapfile`).
    assert!(words.chunks(2).all(|pair| pair[0] == "-c"), "{words:?}");
    let overrides: std::collections::BTreeMap<&str, &str> = words
        .iter()
        .skip(1)
        .step_by(2)
        .map(|w| w.split_once('=').unwrap())
        .collect();
    let command = overrides["mcp_servers.operator.command"].trim_matches('"');
    assert_eq!(
        std::path::Path::new(command).canonicalize().unwrap(),
        bin_dir().join("hark-ask").canonicalize().unwrap()
    );
    assert_eq!(
        overrides["mcp_servers.operator.args"],
        r#"["mcp-operator-ask"]"#
    );
    assert_eq!(
        overrides["mcp_servers.operator.default_tools_approval_mode"],
        r#""approve""#
    );
    assert_eq!(overrides["mcp_servers.operator.required"], "true");
    // Codex cuts a silent call at tool_timeout_sec: above the 120 s wait.
    assert_eq!(overrides["mcp_servers.operator.tool_timeout_sec"], "180");
    for name in [
        "HARK_ASK_SOCK",
        "HARK_SOCKET",
        "HARK_SESSION_ID",
        "XDG_RUNTIME_DIR",
    ] {
        assert!(
            overrides["mcp_servers.operator.env_vars"].contains(&format!("\"{name}\"")),
            "{name} is passed to the server"
        );
    }
    let refused = hark(&sandbox, &["mcp-config", "--for", "codex", "--park-hook"]);
    assert!(!refused.status.success());
}

/// `hark serve --prompter terminal` on the sandbox's socket, serving; its
/// terminal is the child's stdin and stdout (followed).
fn terminal_daemon(sandbox: &Sandbox) -> (std::process::Child, Lines) {
    let mut serve = sandbox
        .hark([
            "serve",
            "--prompter",
            "terminal",
            "--log-format",
            "json",
            "--socket",
        ])
        .arg(sandbox.socket())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let screen = Lines::follow("the terminal", serve.stdout.take().unwrap());
    let log = Lines::follow("hark serve", serve.stderr.take().unwrap());
    log.wait_event("hark is serving the operator", &[]);
    (serve, screen)
}

#[test]
fn the_terminal_daemon_stops_on_sigterm_while_the_terminal_is_quiet() {
    let sandbox = sandbox();
    let (mut serve, _screen) = terminal_daemon(&sandbox);
    // Its terminal stays open and nobody types.
    let _keys = serve.stdin.take().unwrap();
    hark_harness::process::terminate(serve.id()).unwrap();
    let status =
        hark_harness::process::wait_or_kill(&mut serve, hark_harness::process::EXIT_PATIENCE);
    assert!(
        status.is_some_and(|s| s.success()),
        "hark serve ended on SIGTERM without a line typed: {status:?}"
    );
    assert!(!sandbox.socket().exists(), "its socket is removed");
}

#[test]
fn the_terminal_prompter_asks_with_numbered_options() {
    let sandbox = sandbox();
    let (mut serve, screen) = terminal_daemon(&sandbox);
    let file = sandbox.path("q.json");
    std::fs::write(&file, questions(&[db(), features()]).to_string()).unwrap();
    let ask = sandbox
        .hark(["ask", "--file"])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    screen.wait_for("the first question", |l| {
        l.contains("[Database] Which database?")
    });
    screen.wait_for("a numbered option", |l| {
        l.contains("2) SQLite — pick SQLite")
    });
    let mut keys = serve.stdin.take().unwrap();
    keys.write_all(b"\n").unwrap(); // Enter takes the default
    screen.wait_for("the second question", |l| {
        l.contains("[Features] Which features?")
    });
    keys.write_all(b"1,3\n").unwrap();
    let out = ask.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got["answers"],
        json!({"Which database?": "Postgres (Recommended)", "Which features?": ["Auth (Recommended)", "Search"]})
    );
    assert_eq!(got["defaulted"], json!(["Which database?"]));
    let _ = serve.kill();
    let _ = serve.wait();
}

#[test]
fn another_user_cannot_ask_through_the_socket() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let socket = daemon.sandbox.socket();
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    if hark_core_uid() != 0 {
        eprintln!(
            "not root: cannot switch to a second user; the mode bits above and the unit test cover the peer check"
        );
        return;
    }
    // Open the file permissions wide so only the peer-uid checks stand in the way.
    for p in [
        daemon.sandbox.root(),
        socket.parent().unwrap(),
        socket.as_path(),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let file = daemon.sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = daemon
        .sandbox
        .hark(["ask", "--no-wait", "--file"])
        .arg(&file)
        .env("HARK_CONFIG", "/nonexistent/hark.toml")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    // Each end checks the other: the client refuses a server of another
    // user before sending anything, and the server refuses the client.
    assert!(
        stderr.contains(&format!(
            "{} is served by uid 0, not by this user (uid 65534)",
            socket.display()
        )),
        "{stderr}"
    );
    daemon.log.wait_for("the refusal to be logged", |l| {
        l.contains("refused a connection from another user")
    });
}

fn hark_core_uid() -> u32 {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn under_strict_defaults_the_schema_requires_a_default_and_a_call_without_one_is_refused() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let config = daemon.sandbox.path("strict.toml");
    std::fs::write(&config, "strict_defaults = true\n").unwrap();
    let agent = agent(
        &daemon.sandbox,
        &[("HARK_CONFIG", config.to_str().unwrap())],
    )
    .await;
    let tools = agent.list_all_tools().await.unwrap();
    let schema = Value::Object((*tools[0].input_schema).clone());
    assert_eq!(
        schema["properties"]["questions"]["items"]["required"],
        json!(["question", "header", "options", "multiSelect", "default"])
    );

    let no_default = question("Which region?", "Region", &["eu", "us"], false);
    let refused = ask(&agent, questions(&[db(), no_default])).await;
    assert_eq!(refused.is_error, Some(true));
    let message = text(&refused);
    assert!(
        message.contains("questions[1]") && !message.contains("questions[0]"),
        "names the question without a default, only it: {message}"
    );
    assert!(
        inbox(&daemon.sandbox).is_empty(),
        "a refused call parks nobody"
    );

    let answered = ask(&agent, questions(&[db()])).await;
    assert_eq!(
        text(&answered),
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    agent.cancel().await.unwrap();
}

#[test]
fn a_home_directory_that_does_not_exist_is_named_not_created() {
    let sandbox = sandbox();
    let gone = sandbox.path("gone");
    for command in [&["serve"][..], &["inbox"]] {
        let mut hark = sandbox.hark(command);
        for name in [
            "HARK_SOCKET",
            "HARK_DATA_DIR",
            "XDG_RUNTIME_DIR",
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
        ] {
            hark.env_remove(name);
        }
        let mut hark = hark
            .env("HOME", &gone)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // (A daemon that made the home would serve until stopped.)
        let status =
            hark_harness::process::wait_or_kill(&mut hark, hark_harness::process::EXIT_PATIENCE);
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut hark.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(1),
            "{command:?}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "the home directory {} does not exist, and hark does not create it",
                gone.display()
            )),
            "{command:?}: {stderr}"
        );
        assert!(!gone.exists(), "{command:?} created the missing home");
    }
}
