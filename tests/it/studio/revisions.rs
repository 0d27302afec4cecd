//! The studio and 2026-07-28, the revision Claude Code 2.1.332 speaks as a
//! client (measured: `server/discover`, then every request with its
//! revision, client info and capabilities in `_meta`): a question comes
//! back as an input-required result and the client retries the call with
//! its answer. And a client that cancels every elicitation at once, as
//! Claude Code does in `-p`, gets `awaiting_operator` from then on.

use rmcp::model::{CallToolResponse, InputResponses};

use super::*;

/// `hark inbox`'s pending item's id.
fn pending_id(daemon: &Daemon) -> String {
    let items = inbox(&daemon.sandbox);
    let pending: Vec<&Value> = items.iter().filter(|i| i["state"] == "pending").collect();
    assert_eq!(pending.len(), 1, "{items:?}");
    pending[0]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_07_28_client_is_asked_by_an_input_required_result_and_retries_with_its_answer() {
    let daemon = daemon();
    let client = Client::new(ProtocolVersion::V_2026_07_28, true, Says::Decline);
    let service = studio(&daemon, client).await;
    let Value::Object(args) = run_args("studio-mrtr") else {
        unreachable!()
    };
    let first = service
        .call_tool_once(CallToolRequestParams::new("run").with_arguments(args.clone()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(required) = first else {
        panic!("not an input-required result: {first:?}")
    };
    let id = pending_id(&daemon);
    assert_eq!(required.request_state.as_deref(), Some(id.as_str()));
    let requests = serde_json::to_value(required.input_requests.unwrap()).unwrap();
    let request = &requests[&id];
    assert_eq!(request["method"], "elicitation/create", "{requests}");
    assert_eq!(
        request["params"]["requestedSchema"],
        schema_json(&core_questions(), Form::Labelled)
    );
    let message = request["params"]["message"].as_str().unwrap();
    assert!(message.contains("session studio-mrtr"), "{message}");

    let said = json!({"action": "accept", "content": {"q1": "SQLite"}});
    let responses = InputResponses::from([(id.clone(), said)]);
    let retried = service
        .call_tool_once(
            CallToolRequestParams::new("run")
                .with_arguments(args)
                .with_input_responses(responses)
                .with_request_state(id.clone()),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = retried else {
        panic!("the retry did not complete: {retried:?}")
    };
    let ended: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(ended["status"], "finished", "{ended}");
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Auth (Recommended)"]}}"#
    );
    assert_eq!(inbox(&daemon.sandbox)[0]["replied_by"], "studio");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcps_own_client_answers_the_input_required_elicitation_through_its_handler() {
    let daemon = daemon();
    let client = Client::new(
        ProtocolVersion::V_2026_07_28,
        true,
        Says::Accept(json!({"q1": "SQLite", "q2": ["Search"]})),
    );
    let seen = client.seen.clone();
    let service = studio(&daemon, client).await;
    let ended = call(&service, "run", run_args("studio-mrtr-auto")).await;
    assert_eq!(
        ended["result"],
        r#"{"answers":{"Which database?":"SQLite","Which features?":["Search"]}}"#
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_naming_no_question_of_this_studio_answers_nothing() {
    let daemon = daemon();
    let service = studio(
        &daemon,
        Client::new(ProtocolVersion::V_2026_07_28, true, Says::Decline),
    )
    .await;
    for (state, says) in [
        ("not-a-handle".to_owned(), "is not one this server issued"),
        (
            uuid::Uuid::new_v4().to_string(),
            "no run of this studio waits on",
        ),
    ] {
        let said = json!({"action": "accept", "content": {"q1": "SQLite"}});
        let result = service
            .call_tool_once(
                CallToolRequestParams::new("run")
                    .with_arguments(run_args("forged").as_object().unwrap().clone())
                    .with_input_responses(InputResponses::from([(state.clone(), said)]))
                    .with_request_state(state),
            )
            .await
            .unwrap();
        let CallToolResponse::Complete(result) = result else {
            panic!("{result:?}")
        };
        assert_eq!(result.is_error, Some(true));
        assert!(text(&result).contains(says), "{}", text(&result));
    }
    assert!(inbox(&daemon.sandbox).is_empty(), "no run was started");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_cancels_at_once_gets_awaiting_operator_for_the_rest_of_the_session() {
    // As an input-required result (Claude Code -p cancels those) and nested
    // in the call (a decline, for once), with the default reflex: a reply
    // quicker than 750 ms was nobody's.
    for (version, says) in [
        (ProtocolVersion::V_2026_07_28, Says::Cancel),
        (ProtocolVersion::V_2025_11_25, Says::Decline),
    ] {
        let daemon = daemon_with("");
        let client = Client::new(version.clone(), true, says);
        let seen = client.seen.clone();
        let service = studio(&daemon, client).await;
        let waiting = call(&service, "run", run_args("studio-headless")).await;
        assert_eq!(
            waiting["status"], "awaiting_operator",
            "{version:?}: the question was not skipped: {waiting}"
        );
        assert_eq!(seen.lock().unwrap().len(), 1, "it was elicited once");
        let ended = call(
            &service,
            "answer",
            json!({"question_id": waiting["question_id"], "answers": {"Which database?": "SQLite"}}),
        )
        .await;
        assert_eq!(
            ended["result"],
            r#"{"answers":{"Which database?":"SQLite","Which features?":["Auth (Recommended)"]}}"#
        );

        let again = call(&service, "run", run_args("studio-headless-2")).await;
        assert_eq!(again["status"], "awaiting_operator", "{again}");
        assert_eq!(
            seen.lock().unwrap().len(),
            1,
            "{version:?}: the client is elicited no more"
        );
        service.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_nobody_answers_in_the_bounded_wait_is_withdrawn_and_the_agent_told() {
    let daemon = daemon();
    let client = Client::new(ProtocolVersion::V_2025_11_25, true, Says::Wait);
    let withdrawn = client.withdrawn.clone();
    let service = studio(&daemon, client).await;
    let mut args = run_args("studio-timeout");
    args["timeout_secs"] = json!(1);
    // The agent named as a program, as a client would name codex.
    args["agent"] = json!(fake_claude().display().to_string());
    let ended = call(&service, "run", args).await;
    let result = ended["result"].as_str().unwrap();
    assert!(
        result.contains(NOT_ANSWERED) && !result.contains("skipped"),
        "timed out, not skipped: {result}"
    );
    tokio::time::timeout(hark_harness::PATIENCE, withdrawn.notified())
        .await
        .expect("the client was told the elicitation is withdrawn");
    assert_eq!(inbox(&daemon.sandbox)[0]["outcome"]["outcome"], "timed_out");
    service.cancel().await.unwrap();
}
