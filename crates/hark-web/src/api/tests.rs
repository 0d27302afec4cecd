//! The router called as a tower `Service`, with no socket: what a session
//! needs (its cookie and its token, on every request), what a pairing and
//! a push button's token can do, and what no answer gives away.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use hark_core::pairing;
use hark_core::registry::Waited;
use serde_json::json;

use crate::testing::{Session, Surface, call, every_call};

#[tokio::test]
async fn a_session_cookie_without_its_token_reads_nothing_and_answers_nothing() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let other = surface.pair().await;
    let (id, _pending) = surface.ask();
    // What a server on another port of this host is sent: the cookie. With
    // no token, another session's, or an empty one: refused, whatever the
    // method. The token without the cookie is no session either.
    for (method, path, body) in every_call(id, &session.device) {
        for (cookie, token) in [
            (Some(session.cookie.as_str()), None),
            (Some(session.cookie.as_str()), Some(other.token.as_str())),
            (Some(session.cookie.as_str()), Some("")),
            (None, Some(session.token.as_str())),
        ] {
            let answered = surface
                .send(call(&method, &path, &body, cookie, token))
                .await;
            assert_eq!(
                (answered.status, answered.json()["code"].as_str()),
                (StatusCode::UNAUTHORIZED, Some("unauthorized")),
                "{method} {path} with {cookie:?} and {token:?}: {}",
                answered.body
            );
            if cookie.is_some() {
                assert!(
                    answered.body.contains("X-CSRF-Token")
                        && answered.body.contains("hark web pair"),
                    "the refusal says what is missing and what to do: {}",
                    answered.body
                );
            }
            assert!(!answered.body.contains("Which?"), "{}", answered.body);
        }
    }
    // Nothing was answered or revoked.
    assert!(surface.web.registry.get(id).is_some(), "still pending");
    assert_eq!(surface.web.store.devices().unwrap().len(), 2);
    // With its token, the same cookie reads the question and answers it.
    let inbox = surface
        .send(call(
            &Method::GET,
            "/api/inbox",
            &None,
            Some(&session.cookie),
            Some(&session.token),
        ))
        .await;
    assert_eq!(inbox.status, StatusCode::OK, "{}", inbox.body);
    assert!(inbox.body.contains(&id.to_string()), "{}", inbox.body);
    let reply = surface
        .send(call(
            &Method::POST,
            &format!("/api/items/{id}/reply"),
            &Some(json!({"action": "skip"})),
            Some(&session.cookie),
            Some(&session.token),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(surface.web.registry.get(id).is_none(), "answered");
}

#[tokio::test]
async fn only_the_pairings_answer_carries_the_sessions_token() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (id, _pending) = surface.ask();
    for (method, path, body) in every_call(id, &session.device) {
        let answered = surface
            .send(call(
                &method,
                &path,
                &body,
                Some(&session.cookie),
                Some(&session.token),
            ))
            .await;
        // (The verdict comes after the reply settled the item: 409.)
        assert!(
            !matches!(
                answered.status,
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ),
            "{method} {path}: {} {}",
            answered.status,
            answered.body
        );
        assert!(
            !answered.body.contains(&session.token),
            "{method} {path} gave the token back: {}",
            answered.body
        );
    }
}

#[tokio::test]
async fn a_right_code_pairs_however_many_wrong_ones_came_from_its_address() {
    let surface = Surface::new();
    let mut throttled = 0;
    for _ in 0..25 {
        let (answered, cookie) = surface.try_pair("ZZZZ-ZZZZ-ZZZZ-ZZZZ").await;
        assert!(cookie.is_none());
        match answered.status {
            StatusCode::TOO_MANY_REQUESTS => throttled += 1,
            status => assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", answered.body),
        }
    }
    assert!(throttled > 0, "wrong codes past the limit are answered 429");
    // The operator's own code, from the same address, right after.
    let code = pairing::mint_code(&surface.web.store).unwrap();
    let (answered, cookie) = surface.try_pair(&code.code).await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
    assert!(cookie.is_some());
}

#[tokio::test]
async fn a_push_buttons_token_answers_its_choice_once_and_a_session_is_no_token() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (id, mut pending) = surface.ask();
    let token = pairing::secret().unwrap();
    surface
        .web
        .store
        .add_push_token(&pairing::hash(&token), id, "option:b", None)
        .unwrap();
    let push = |token: &str, session: Option<&Session>| {
        call(
            &Method::POST,
            &format!("/api/push/{token}"),
            &None,
            session.map(|s| s.cookie.as_str()),
            session.map(|s| s.token.as_str()),
        )
    };
    // A session's cookie and token do not stand for a button's token.
    let forged = surface.send(push(&"0".repeat(64), Some(&session))).await;
    assert_eq!(forged.status, StatusCode::NOT_FOUND, "{}", forged.body);
    assert!(surface.web.registry.get(id).is_some());

    let pressed = surface.send(push(&token, None)).await;
    assert_eq!(pressed.status, StatusCode::OK, "{}", pressed.body);
    assert!(surface.web.registry.get(id).is_none(), "answered");
    let waited = tokio::time::timeout(Duration::from_secs(10), pending.wait())
        .await
        .expect("the asker is answered");
    let Waited::Settled(outcome) = waited else {
        panic!("{waited:?}");
    };
    let outcome = serde_json::to_value(outcome).unwrap();
    assert_eq!(outcome["answers"], json!({"Which?": "b"}), "{outcome}");
    // Replayed: refused, and nothing more is said than that.
    let replayed = surface.send(push(&token, None)).await;
    assert_eq!(
        (replayed.status, replayed.json()["code"].as_str()),
        (StatusCode::GONE, Some("gone")),
        "{}",
        replayed.body
    );
}

#[tokio::test]
async fn an_expired_push_buttons_token_is_gone_and_answers_nothing() {
    let surface = Surface::new();
    let (id, _pending) = surface.ask();
    let token = pairing::secret().unwrap();
    let past = std::time::SystemTime::now() - Duration::from_secs(1);
    surface
        .web
        .store
        .add_push_token(&pairing::hash(&token), id, "option:a", Some(past))
        .unwrap();
    let pressed = surface
        .send(call(
            &Method::POST,
            &format!("/api/push/{token}"),
            &None,
            None,
            None,
        ))
        .await;
    assert_eq!(
        (pressed.status, pressed.code().as_str()),
        (StatusCode::GONE, "gone"),
        "{}",
        pressed.body
    );
    assert!(pressed.body.contains("expired"), "{}", pressed.body);
    assert!(surface.web.registry.get(id).is_some(), "still pending");
}
