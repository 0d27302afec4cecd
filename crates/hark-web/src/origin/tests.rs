//! The host and origin checks, through the router as a tower `Service`:
//! which `Host` names the surface (its address, loopback names, IPv6
//! literals in brackets, a proxy's configured origin, any name when it
//! listens on every address; always with the port), and which `Origin` an
//! API request may come from.

use axum::http::{Method, StatusCode, header};
use hark_core::config::{Origin, WebOrigin};
use serde_json::json;

use crate::testing::{Session, Setup, Surface, call, request};

fn origins(given: &[&str]) -> Vec<Origin> {
    given
        .iter()
        .map(|o| o.parse::<WebOrigin>().unwrap().origin())
        .collect()
}

/// `GET /api/session` with `session`'s secrets, `host` as its `Host` (none
/// when `None`) and the `(name, value)` headers `more`.
async fn session_as(
    surface: &Surface,
    session: &Session,
    host: Option<&str>,
    more: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = call(
        &Method::GET,
        "/api/session",
        &None,
        Some(&session.cookie),
        Some(&session.token),
    );
    match host {
        Some(host) => {
            request
                .headers_mut()
                .insert(header::HOST, host.parse().unwrap());
        }
        None => {
            request.headers_mut().remove(header::HOST);
        }
    }
    for (name, value) in more {
        let name = header::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    let answered = surface.send(request).await;
    (answered.status, answered.body)
}

/// Asserts which of `hosts` the surface of `setup` serves (200) and which
/// it refuses (403, saying so).
async fn hosts(setup: Setup, served: &[&str], refused: &[&str]) {
    let surface = Surface::with(setup.clone());
    let session = surface.pair().await;
    for host in served {
        let (status, body) = session_as(&surface, &session, Some(host), &[]).await;
        assert_eq!(status, StatusCode::OK, "Host: {host} on {setup:?}: {body}");
    }
    for host in refused {
        let (status, body) = session_as(&surface, &session, Some(host), &[]).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "Host: {host} on {setup:?}: {body}"
        );
        assert!(body.contains("\"forbidden\""), "{body}");
    }
}

#[tokio::test]
async fn on_loopback_it_answers_its_address_and_loopback_names_with_its_port() {
    hosts(
        Setup::default(),
        &[
            "127.0.0.1:8787",
            "localhost:8787",
            "LocalHost:8787",
            "127.0.0.2:8787",
            "[::1]:8787",
            "[0:0:0:0:0:0:0:1]:8787",
        ],
        &[
            // Another name: a DNS-rebinding page's.
            "evil.example:80",
            "evil.example:8787",
            "evil.example",
            "localhost.evil.example:8787",
            "127.0.0.1.nip.io:8787",
            // Its names without the port, or with another.
            "127.0.0.1",
            "localhost",
            "[::1]",
            "127.0.0.1:8788",
            "[::1]:8788",
            "[::2]:8787",
            // Not a host and port.
            "[::1:8787",
            "::1:8787",
            "[::1]8787",
            "127.0.0.1:http",
            "127.0.0.1:99999",
            "127.0.0.1:8787/x",
            "",
        ],
    )
    .await;
}

#[tokio::test]
async fn on_an_ipv6_address_it_answers_it_bracketed_with_its_port() {
    hosts(
        Setup {
            listen: "[::1]:8787".parse().unwrap(),
            ..Setup::default()
        },
        &[
            "[::1]:8787",
            "[0::1]:8787",
            "localhost:8787",
            "127.0.0.1:8787",
        ],
        &["[::1]", "[::1]:80", "::1", "[fe80::1]:8787"],
    )
    .await;
    hosts(
        Setup {
            listen: "[fd00::5]:8787".parse().unwrap(),
            secure: true,
            ..Setup::default()
        },
        &["[fd00::5]:8787", "[FD00:0::5]:8787", "localhost:8787"],
        &[
            "[fd00::6]:8787",
            "fd00::5:8787",
            "[fd00::5]",
            "evil.example:8787",
        ],
    )
    .await;
}

#[tokio::test]
async fn off_loopback_it_answers_its_address_and_on_every_address_any_name_with_its_port() {
    hosts(
        Setup {
            listen: "192.168.1.5:8787".parse().unwrap(),
            secure: true,
            ..Setup::default()
        },
        &["192.168.1.5:8787", "localhost:8787"],
        &["192.168.1.6:8787", "192.168.1.5:443", "box.lan:8787"],
    )
    .await;
    for listen in ["0.0.0.0:8787", "[::]:8787"] {
        hosts(
            Setup {
                listen: listen.parse().unwrap(),
                secure: true,
                ..Setup::default()
            },
            &["box.lan:8787", "192.168.1.5:8787", "[fd00::5]:8787"],
            &["box.lan", "box.lan:443", "[fd00::5]"],
        )
        .await;
    }
}

#[tokio::test]
async fn behind_a_proxy_it_answers_a_configured_origins_host_and_port() {
    hosts(
        Setup {
            origins: origins(&["https://box.ts.net", "http://[fd00::5]:9000"]),
            ..Setup::default()
        },
        &[
            "box.ts.net",
            "box.ts.net:443",
            "BOX.ts.net",
            "[fd00::5]:9000",
            "127.0.0.1:8787",
        ],
        &[
            "box.ts.net:8443",
            "box.ts.net:80",
            "other.ts.net",
            "ts.net",
            "[fd00::5]",
            "[fd00::5]:80",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_request_without_a_host_is_refused() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (status, body) = session_as(&surface, &session, None, &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("names no host"), "{body}");
}

/// Asserts which `Origin`s an API request to the surface of `setup`, for
/// `host`, may come from.
async fn origins_of(setup: Setup, host: &str, allowed: &[&str], refused: &[&str]) {
    let surface = Surface::with(setup.clone());
    let session = surface.pair().await;
    for origin in allowed {
        let (status, body) =
            session_as(&surface, &session, Some(host), &[("origin", origin)]).await;
        assert_eq!(status, StatusCode::OK, "Origin: {origin} to {host}: {body}");
    }
    for origin in refused {
        let (status, body) =
            session_as(&surface, &session, Some(host), &[("origin", origin)]).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "Origin: {origin} to {host}: {body}"
        );
        assert!(body.contains("cross-origin"), "{body}");
    }
}

#[tokio::test]
async fn an_api_request_comes_from_the_origin_it_is_sent_to_or_a_configured_one() {
    origins_of(
        Setup::default(),
        "127.0.0.1:8787",
        &["http://127.0.0.1:8787", "HTTP://127.0.0.1:8787"],
        &[
            "http://evil.example",
            "null",
            "",
            "not a url",
            // A mismatched scheme, port or host.
            "https://127.0.0.1:8787",
            "http://127.0.0.1:8788",
            "http://127.0.0.1",
            "http://localhost:8787",
            "http://[::1]:8787",
            "http://127.0.0.1:8787.evil.example",
            "file:///etc/passwd",
            "chrome-extension://abc",
        ],
    )
    .await;
    origins_of(
        Setup::default(),
        "[::1]:8787",
        &["http://[::1]:8787", "http://[0:0::1]:8787"],
        &[
            "http://127.0.0.1:8787",
            "http://[::1]",
            "https://[::1]:8787",
        ],
    )
    .await;
    // Over TLS its origin is https://; behind a proxy, the proxy's too.
    origins_of(
        Setup {
            listen: "192.168.1.5:8443".parse().unwrap(),
            secure: true,
            origins: origins(&["https://box.ts.net"]),
            ..Setup::default()
        },
        "192.168.1.5:8443",
        &[
            "https://192.168.1.5:8443",
            "https://box.ts.net",
            "https://box.ts.net:443",
        ],
        &[
            "http://192.168.1.5:8443",
            "http://box.ts.net",
            "https://box.ts.net:8443",
            "https://evil.ts.net",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_browsers_cross_site_fetch_is_refused_by_its_fetch_metadata() {
    let surface = Surface::new();
    let session = surface.pair().await;
    for (site, status) in [
        ("same-origin", StatusCode::OK),
        ("none", StatusCode::OK),
        ("same-site", StatusCode::FORBIDDEN),
        ("cross-site", StatusCode::FORBIDDEN),
    ] {
        let (got, body) = session_as(
            &surface,
            &session,
            Some("127.0.0.1:8787"),
            &[("sec-fetch-site", site)],
        )
        .await;
        assert_eq!(got, status, "Sec-Fetch-Site: {site}: {body}");
    }
}

#[tokio::test]
async fn a_cross_origin_reply_with_both_secrets_changes_nothing() {
    let surface = Surface::new();
    let session = surface.pair().await;
    let (id, _pending) = surface.ask();
    for (name, value) in [
        ("origin", "http://evil.example"),
        ("origin", "null"),
        ("sec-fetch-site", "cross-site"),
        ("host", "evil.example:8787"),
    ] {
        let mut reply = call(
            &Method::POST,
            &format!("/api/items/{id}/reply"),
            &Some(json!({"action": "skip"})),
            Some(&session.cookie),
            Some(&session.token),
        );
        reply.headers_mut().insert(name, value.parse().unwrap());
        let answered = surface.send(reply).await;
        assert_eq!(
            (answered.status, answered.code().as_str()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{name}: {value}: {}",
            answered.body
        );
    }
    assert!(surface.web.registry.get(id).is_some(), "still pending");
}

#[tokio::test]
async fn pages_need_the_host_but_no_origin_and_push_buttons_no_origin() {
    let surface = Surface::new();
    let page = |host: &str, origin: &str| {
        let mut page = request(Method::GET, "/")
            .header(header::ORIGIN, origin)
            .body(axum::body::Body::empty())
            .unwrap();
        page.headers_mut()
            .insert(header::HOST, host.parse().unwrap());
        page
    };
    // A page is fetched with no Origin check (a navigation may carry another
    // site's), but only as this host.
    let index = surface
        .send(page("127.0.0.1:8787", "http://evil.example"))
        .await;
    assert_eq!(index.status, StatusCode::OK);
    let rebound = surface
        .send(page("evil.example:8787", "http://evil.example"))
        .await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN);
    // A push button is called from the ntfy app's origin: its token is the
    // credential (an unknown one is 404, not a refusal of its origin).
    let push = request(Method::POST, &format!("/api/push/{}", "0".repeat(64)))
        .header(header::ORIGIN, "https://ntfy.sh")
        .header("sec-fetch-site", "cross-site")
        .body(axum::body::Body::empty())
        .unwrap();
    let pushed = surface.send(push).await;
    assert_eq!(pushed.status, StatusCode::NOT_FOUND, "{}", pushed.body);
}
