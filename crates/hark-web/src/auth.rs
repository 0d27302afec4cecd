//! Who may call the API: a paired device's session, which is two secrets
//! that only the page that paired holds together: the `hark_session`
//! cookie, and the session's token in `X-CSRF-Token` on every API request,
//! reads and the live feed included. A cookie is sent to every port of its
//! host, so a server an agent runs on another loopback port receives it;
//! the token was handed out once, in the pairing's answer, and the page
//! keeps it in `localStorage`, which is its origin's alone (scheme, host
//! and port), and no answer gives it again. Besides: the surface's own
//! origin and host, and the limit on failed pairings.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hark_core::pairing;
use hark_core::store::WebSessionRecord;

use crate::Web;
use crate::error::ApiError;

/// The session cookie's name.
pub const COOKIE: &str = "hark_session";
/// The header every API request carries the session's token in (the
/// pairing's `csrf`): it was named for its first use, changes, and now
/// stands with the cookie on reads too.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The `Set-Cookie` value that opens a session with `token`.
pub fn session_cookie(token: &str, secure: bool) -> String {
    let max_age = pairing::SESSION_TTL.as_secs();
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}")
}

/// The `Set-Cookie` value that drops the session cookie.
pub fn cleared_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}")
}

/// The value of the cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A request with a live session: its cookie, and the session's token in
/// [`CSRF_HEADER`], whatever the method (else it is refused with 401
/// before anything is read or done).
#[derive(Debug, Clone)]
pub struct Authed {
    pub session: WebSessionRecord,
    /// The cookie's token, to look the session up again (a long stream).
    pub token: String,
}

impl FromRequestParts<Arc<Web>> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Authed, ApiError> {
        let token = cookie(&parts.headers, COOKIE)
            .filter(|t| !t.is_empty())
            .ok_or_else(ApiError::unauthorized)?
            .to_owned();
        let session = pairing::session(&web.store, &token)
            .map_err(ApiError::unavailable)?
            .ok_or_else(ApiError::unauthorized)?;
        let given = parts
            .headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !pairing::csrf_matches(&session, given) {
            return Err(ApiError::cookie_alone());
        }
        Ok(Authed { session, token })
    }
}

/// Refuses a request for another host than the surface's (a DNS rebinding
/// page) and an API request from another origin (a cross-site form or
/// fetch): 403, before any handler runs.
pub async fn same_origin(State(web): State<Arc<Web>>, request: Request, next: Next) -> Response {
    if let Err(refusal) = check_origin(&web, request.headers(), request.uri().path()) {
        return refusal.into_response();
    }
    next.run(request).await
}

fn check_origin(web: &Web, headers: &HeaderMap, path: &str) -> Result<(), ApiError> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(|| ApiError::forbidden("the request names no host"))?;
    if !host_allowed(web, host) {
        return Err(ApiError::forbidden(format!(
            "this surface is not served as {host:?}; add its origin to `[web] origins` if a proxy serves it so"
        )));
    }
    // A push button's call comes from the ntfy app (or its web app, on
    // its own origin) and carries no cookie: its one-time token is the
    // credential, so no origin is asked of it.
    if !path.starts_with("/api/") || path.starts_with("/api/push/") {
        return Ok(());
    }
    let fetch_site = headers.get("sec-fetch-site").and_then(|h| h.to_str().ok());
    if fetch_site.is_some_and(|site| !matches!(site, "same-origin" | "none")) {
        return Err(ApiError::forbidden("cross-origin requests are refused"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let scheme = if web.secure { "https" } else { "http" };
        let own = format!("{scheme}://{host}");
        if origin != own && !web.origins.iter().any(|o| o == origin) {
            return Err(ApiError::forbidden(format!(
                "requests from {origin:?} are refused (cross-origin)"
            )));
        }
    }
    Ok(())
}

/// Whether `host` (a `Host` header) names this surface: its listen
/// address, a loopback name with its port, or a configured origin's host.
fn host_allowed(web: &Web, host: &str) -> bool {
    let port = web.listen.port();
    let (name, host_port) = split_host(host);
    let loopback_name = name == "localhost"
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let listen_name = match web.listen.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let served = (loopback_name || name == listen_name) && host_port == Some(port);
    let proxied = web.origins.iter().any(|origin| {
        origin
            .split_once("://")
            .is_some_and(|(_, origin_host)| origin_host == host)
    });
    // Listening on every address: any name with the port (TLS, or the
    // operator's --insecure-http, was required for it).
    let wildcard = web.listen.ip().is_unspecified() && host_port == Some(port);
    served || proxied || wildcard
}

/// A `Host` header's name (`[::1]` with its brackets) and port.
fn split_host(host: &str) -> (&str, Option<u16>) {
    let (name, port) = match host.find(']') {
        Some(end) if host.starts_with('[') => (&host[..=end], host[end + 1..].strip_prefix(':')),
        _ => match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    (name, port.and_then(|p| p.parse().ok()))
}

/// Failed pairings: at most [`PER_ADDRESS`] from one client address and
/// [`OVERALL`] from all in [`WINDOW`]; past that, a wrong code is answered
/// 429 until the oldest failure leaves the window. A right code is never
/// held back (it is checked first), so whoever shares the operator's
/// address cannot lock the operator out; a code's 80 bits and 5 minutes
/// are what keep it from being guessed.
#[derive(Debug, Default)]
pub struct Limiter {
    failures: Mutex<Failures>,
}

pub const WINDOW: Duration = Duration::from_secs(60);
pub const PER_ADDRESS: usize = 5;
pub const OVERALL: usize = 20;

#[derive(Debug, Default)]
struct Failures {
    by_address: HashMap<IpAddr, VecDeque<Instant>>,
    all: VecDeque<Instant>,
}

fn forget_old(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
}

/// How long until `times` is under `limit` again, if it is at it.
fn wait(times: &VecDeque<Instant>, limit: usize, now: Instant) -> Option<Duration> {
    (times.len() >= limit).then(|| {
        let oldest = times[times.len() - limit];
        WINDOW.saturating_sub(now.duration_since(oldest))
    })
}

impl Limiter {
    /// Whether `address` may try a code now; else how long it waits.
    pub fn check(&self, address: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        forget_old(&mut failures.all, now);
        let mine = failures.by_address.entry(address).or_default();
        forget_old(mine, now);
        let mine = wait(mine, PER_ADDRESS, now);
        let all = wait(&failures.all, OVERALL, now);
        failures.by_address.retain(|_, times| !times.is_empty());
        match mine.max(all) {
            Some(wait) => Err(wait.max(Duration::from_secs(1))),
            None => Ok(()),
        }
    }

    /// Counts a failed pairing from `address`.
    pub fn failed(&self, address: IpAddr) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.all.push_back(now);
        failures
            .by_address
            .entry(address)
            .or_default()
            .push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_per_address_and_overall() {
        let limiter = Limiter::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..PER_ADDRESS {
            assert!(limiter.check(a).is_ok());
            limiter.failed(a);
        }
        let wait = limiter.check(a).unwrap_err();
        assert!(wait <= WINDOW && wait >= Duration::from_secs(1));
        // Another address is not held back by a's failures…
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(limiter.check(b).is_ok());
        // …until all of them together reach the overall limit.
        for i in 0..(OVERALL - PER_ADDRESS) {
            limiter.failed(IpAddr::from([10, 0, 1, i as u8]));
        }
        assert!(limiter.check(b).is_err());
    }

    #[test]
    fn a_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "a=1; hark_session=tok; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, COOKIE), Some("tok"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
