//! Pairing, sessions and the limits on failures, through the router as a
//! tower `Service`, on the test's clocks: the store's wall clock for a
//! code's five minutes and a session's thirty days (a second surface on the
//! same store, its clock earlier, is the store as it was then), the
//! limiters' monotonic clock for their window.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use hark_core::model::ids::Clock;
use hark_core::pairing;

use super::*;
use crate::testing::{Answered, Hands, Setup, Surface, call, pairing as pair_request};

/// `request` as sent from `peer`.
fn from(peer: [u8; 4], mut request: Request<Body>) -> Request<Body> {
    let peer = SocketAddr::from((peer, 50000));
    request.extensions_mut().insert(ConnectInfo(peer));
    request
}

fn retry_after(answered: &Answered) -> u64 {
    answered.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// The surface as its store was `ago`.
fn earlier(surface: &Surface, ago: Duration) -> Surface {
    surface.sharing(Setup {
        clock: Clock::ticking_from(SystemTime::now() - ago),
        ..Setup::default()
    })
}

#[test]
fn the_limit_holds_per_address_and_overall_and_for_its_window() {
    let hands = Hands::new();
    let limiter = Limiter::with_clock(hands.ticks());
    let a: IpAddr = "10.0.0.1".parse().unwrap();
    for _ in 0..PER_ADDRESS {
        assert!(limiter.check(a).is_ok());
        limiter.failed(a);
    }
    assert_eq!(limiter.check(a), Err(WINDOW));
    hands.advance(Duration::from_secs(45));
    assert_eq!(limiter.check(a), Err(Duration::from_secs(15)));
    // Another address is not held back by a's failures…
    let b: IpAddr = "10.0.0.2".parse().unwrap();
    assert!(limiter.check(b).is_ok());
    // …until all of them together reach the overall limit.
    for i in 0..(OVERALL - PER_ADDRESS) {
        limiter.failed(IpAddr::from([10, 0, 1, i as u8]));
    }
    assert_eq!(limiter.check(b), Err(Duration::from_secs(15)));
    // The oldest failures leave the window: a is free again, and the
    // newest keep the overall count under its limit.
    hands.advance(Duration::from_secs(15));
    assert!(limiter.check(a).is_ok());
    assert!(limiter.check(b).is_ok());
    // A wait under a second is said as one.
    for _ in 0..PER_ADDRESS {
        limiter.failed(a);
    }
    hands.advance(WINDOW - Duration::from_millis(10));
    assert_eq!(limiter.check(a), Err(Duration::from_secs(1)));
}

#[test]
fn the_session_cookie_is_found_among_others_and_malformed_pairs_are_skipped() {
    let headers = |values: &[&str]| {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::COOKIE, value.parse().unwrap());
        }
        headers
    };
    for (given, found) in [
        (&["a=1; hark_session=tok; b=2"][..], Some("tok")),
        (&["hark_session=tok"], Some("tok")),
        (&["a=1", "hark_session=tok"], Some("tok")),
        (&["junk; hark_session=tok"], Some("tok")),
        (&["hark_session_x=1; x_hark_session=2"], None),
        (&["hark_session"], None),
        (&[], None),
    ] {
        assert_eq!(cookie(&headers(given), COOKIE), found, "{given:?}");
    }
}

#[test]
fn the_session_cookie_is_http_only_strict_on_every_path_and_secure_over_tls() {
    let set = |value: &str| cookie::Cookie::parse(value.to_owned()).unwrap();
    for secure in [false, true] {
        let opened = set(&session_cookie("tok", secure));
        assert_eq!((opened.name(), opened.value()), (COOKIE, "tok"));
        assert_eq!(opened.http_only(), Some(true));
        assert_eq!(opened.same_site(), Some(cookie::SameSite::Strict));
        assert_eq!(opened.path(), Some("/"));
        assert_eq!(opened.domain(), None, "this host alone");
        assert_eq!(
            opened.max_age(),
            Some(cookie::time::Duration::seconds(
                pairing::SESSION_TTL.as_secs() as i64
            ))
        );
        assert_eq!(opened.secure(), secure.then_some(true));
        let cleared = set(&cleared_cookie(secure));
        assert_eq!((cleared.name(), cleared.value()), (COOKIE, ""));
        assert_eq!(cleared.max_age(), Some(cookie::time::Duration::ZERO));
        assert_eq!(cleared.path(), Some("/"));
        assert_eq!(cleared.secure(), secure.then_some(true));
    }
}

#[tokio::test]
async fn pairing_over_tls_sets_a_secure_cookie_and_asks_for_https_from_then_on() {
    for secure in [false, true] {
        let surface = Surface::with(Setup {
            secure,
            ..Setup::default()
        });
        let code = pairing::mint_code(&surface.web.store).unwrap();
        let answered = surface.send(pair_request(&code.code)).await;
        assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
        let set = answered.headers[header::SET_COOKIE].to_str().unwrap();
        let set = cookie::Cookie::parse(set).unwrap();
        assert_eq!(set.secure(), secure.then_some(true), "{set}");
        assert_eq!(
            answered
                .headers
                .contains_key(header::STRICT_TRANSPORT_SECURITY),
            secure
        );
    }
}

#[tokio::test]
async fn a_code_pairs_once_within_its_five_minutes_and_nothing_else_pairs() {
    let surface = Surface::new();
    let refused = |answered: &Answered, cookie: &Option<String>, what: &str| {
        assert_eq!(
            (answered.status, answered.code().as_str()),
            (StatusCode::UNAUTHORIZED, "forbidden"),
            "{what}: {}",
            answered.body
        );
        assert!(answered.body.contains("hark web pair"), "{}", answered.body);
        assert!(cookie.is_none(), "{what} set a cookie");
    };
    for wrong in ["ZZZZ-ZZZZ-ZZZZ-ZZZZ", "", "not a code", "ABCD"] {
        let (answered, cookie) = surface.try_pair(wrong).await;
        refused(&answered, &cookie, wrong);
    }
    // Used: a code pairs one device, once.
    let code = pairing::mint_code(&surface.web.store).unwrap();
    let (first, cookie) = surface.try_pair(&code.code).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(cookie.is_some());
    let (again, cookie) = surface.try_pair(&code.code).await;
    refused(&again, &cookie, "a used code");
    // Typed loosely (lowercase, no dashes), it is the same code.
    let code = pairing::mint_code(&surface.web.store).unwrap();
    let loose = code.code.replace('-', "").to_lowercase();
    let (answered, _) = surface.try_pair(&loose).await;
    assert_eq!(
        answered.status,
        StatusCode::OK,
        "{loose}: {}",
        answered.body
    );
    // (The wrong and used codes' minute passes: not held back by them.)
    surface.hands.advance(WINDOW);
    // Minted just under five minutes ago: it pairs; just over: expired.
    let fresh = pairing::mint_code(
        &earlier(&surface, pairing::CODE_TTL - Duration::from_secs(5))
            .web
            .store,
    )
    .unwrap();
    let (answered, _) = surface.try_pair(&fresh.code).await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
    let stale = pairing::mint_code(
        &earlier(&surface, pairing::CODE_TTL + Duration::from_secs(1))
            .web
            .store,
    )
    .unwrap();
    let (answered, cookie) = surface.try_pair(&stale.code).await;
    refused(&answered, &cookie, "an expired code");
    assert_eq!(surface.web.store.devices().unwrap().len(), 3);
}

#[tokio::test]
async fn a_session_ends_after_its_thirty_days_and_when_its_device_is_revoked() {
    let surface = Surface::new();
    let old = earlier(&surface, pairing::SESSION_TTL + Duration::from_secs(1))
        .pair()
        .await;
    let recent = earlier(&surface, pairing::SESSION_TTL - Duration::from_secs(60))
        .pair()
        .await;
    let other = surface.pair().await;
    let read = |session: &crate::testing::Session| {
        call(
            &Method::GET,
            "/api/session",
            &None,
            Some(&session.cookie),
            Some(&session.token),
        )
    };
    assert_eq!(
        surface.send(read(&old)).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(surface.send(read(&recent)).await.status, StatusCode::OK);
    let revoked = surface
        .send(call(
            &Method::DELETE,
            &format!("/api/devices/{}", recent.device),
            &None,
            Some(&other.cookie),
            Some(&other.token),
        ))
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    assert!(
        !revoked.headers.contains_key(header::SET_COOKIE),
        "another device's revocation keeps this one's cookie"
    );
    let (id, _pending) = surface.ask();
    for request in [
        read(&recent),
        call(
            &Method::POST,
            &format!("/api/items/{id}/reply"),
            &Some(serde_json::json!({"action": "skip"})),
            Some(&recent.cookie),
            Some(&recent.token),
        ),
    ] {
        let answered = surface.send(request).await;
        assert_eq!(
            answered.status,
            StatusCode::UNAUTHORIZED,
            "{}",
            answered.body
        );
    }
    assert!(surface.web.registry.get(id).is_some(), "still pending");
    // Revoking itself, a device's cookie is dropped.
    let own = surface
        .send(call(
            &Method::DELETE,
            &format!("/api/devices/{}", other.device),
            &None,
            Some(&other.cookie),
            Some(&other.token),
        ))
        .await;
    let set = own.headers[header::SET_COOKIE].to_str().unwrap();
    let set = cookie::Cookie::parse(set).unwrap();
    assert_eq!(
        (set.value(), set.max_age()),
        ("", Some(cookie::time::Duration::ZERO))
    );
}

#[tokio::test]
async fn a_session_needs_its_own_token_exactly() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let mut near = session.token.clone().into_bytes();
    near[0] = if near[0] == b'0' { b'1' } else { b'0' };
    let near = String::from_utf8(near).unwrap();
    let upper = session.token.to_uppercase();
    let longer = format!("{}0", session.token);
    for token in [
        None,
        Some(""),
        Some(near.as_str()),
        Some(upper.as_str()),
        Some(longer.as_str()),
    ] {
        let answered = surface
            .send(call(
                &Method::GET,
                "/api/session",
                &None,
                Some(&session.cookie),
                token,
            ))
            .await;
        assert_eq!(
            (answered.status, answered.code().as_str()),
            (StatusCode::UNAUTHORIZED, "unauthorized"),
            "{token:?}: {}",
            answered.body
        );
    }
    // The token is no cookie, and the cookie no token.
    for (cookie, token) in [
        (format!("{COOKIE}={}", session.token), session.token.clone()),
        (session.cookie.clone(), session.cookie.clone()),
    ] {
        let answered = surface
            .send(call(
                &Method::GET,
                "/api/session",
                &None,
                Some(&cookie),
                Some(&token),
            ))
            .await;
        assert_eq!(answered.status, StatusCode::UNAUTHORIZED, "{cookie}");
    }
}

#[tokio::test]
async fn wrong_codes_are_answered_429_past_the_limit_until_the_window_passes() {
    let surface = Surface::new();
    let wrong = || pair_request("ZZZZ-ZZZZ-ZZZZ-ZZZZ");
    for _ in 0..PER_ADDRESS {
        let answered = surface.send(from([10, 0, 0, 1], wrong())).await;
        assert_eq!(answered.status, StatusCode::UNAUTHORIZED);
    }
    let held = surface.send(from([10, 0, 0, 1], wrong())).await;
    assert_eq!(held.status, StatusCode::TOO_MANY_REQUESTS, "{}", held.body);
    assert_eq!(retry_after(&held), WINDOW.as_secs());
    // Another address still tries, until all the addresses' failures
    // together reach the overall limit.
    for n in 0..(OVERALL - PER_ADDRESS) as u8 {
        let answered = surface.send(from([10, 0, 1, n], wrong())).await;
        assert_eq!(answered.status, StatusCode::UNAUTHORIZED, "{n}");
    }
    let overall = surface.send(from([10, 0, 2, 1], wrong())).await;
    assert_eq!(overall.status, StatusCode::TOO_MANY_REQUESTS);
    // The operator's own code pairs from the held address all the same.
    let code = pairing::mint_code(&surface.web.store).unwrap();
    let own = surface
        .send(from([10, 0, 0, 1], pair_request(&code.code)))
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    // Time tells the wait, and the window's end lifts it.
    surface.hands.advance(Duration::from_secs(40));
    let held = surface.send(from([10, 0, 0, 1], wrong())).await;
    assert_eq!(retry_after(&held), 20);
    surface.hands.advance(Duration::from_secs(20));
    let again = surface.send(from([10, 0, 0, 1], wrong())).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "{}", again.body);
}

#[tokio::test]
async fn wrong_push_tokens_are_limited_as_wrong_codes_are() {
    let surface = Surface::new();
    let wrong = || {
        call(
            &Method::POST,
            &format!("/api/push/{}", "0".repeat(64)),
            &None,
            None,
            None,
        )
    };
    for _ in 0..PER_ADDRESS {
        let answered = surface.send(from([10, 0, 0, 1], wrong())).await;
        assert_eq!(answered.status, StatusCode::NOT_FOUND, "{}", answered.body);
    }
    let held = surface.send(from([10, 0, 0, 1], wrong())).await;
    assert_eq!(held.status, StatusCode::TOO_MANY_REQUESTS, "{}", held.body);
    // The pairing's limit is its own.
    let code = surface
        .send(from([10, 0, 0, 1], pair_request("ZZZZ")))
        .await;
    assert_eq!(code.status, StatusCode::UNAUTHORIZED);
    surface.hands.advance(WINDOW);
    let again = surface.send(from([10, 0, 0, 1], wrong())).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}
