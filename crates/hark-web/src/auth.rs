//! Who may call the API: a paired device's session, which is two secrets
//! that only the page that paired holds together: the `hark_session`
//! cookie, and the session's token in `X-CSRF-Token` on every API request,
//! reads and the live feed included. A cookie is sent to every port of its
//! host, so a server an agent runs on another loopback port receives it;
//! the token was handed out once, in the pairing's answer, and the page
//! keeps it in `localStorage`, which is its origin's alone (scheme, host
//! and port), and no answer gives it again. Besides: the limit on failed
//! pairings. (The surface's own host and origin are [`crate::origin`]'s.)

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use cookie::{Cookie, SameSite};
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

/// The `Set-Cookie` value that opens a session with `token`: the browser
/// sends it back to this host only (no `Domain`), never to a script
/// (`HttpOnly`), never from another site (`SameSite=Strict`), and over
/// HTTPS only when it is served so (`Secure`).
pub fn session_cookie(token: &str, secure: bool) -> String {
    let max_age = i64::try_from(pairing::SESSION_TTL.as_secs()).unwrap_or(i64::MAX);
    cookie_of(
        token.to_owned(),
        cookie::time::Duration::seconds(max_age),
        secure,
    )
}

/// The `Set-Cookie` value that drops the session cookie.
pub fn cleared_cookie(secure: bool) -> String {
    cookie_of(String::new(), cookie::time::Duration::ZERO, secure)
}

fn cookie_of(value: String, max_age: cookie::time::Duration, secure: bool) -> String {
    Cookie::build((COOKIE, value))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(max_age)
        .secure(secure)
        .build()
        .to_string()
}

/// The value of the cookie `name` in the request's `Cookie` headers (a
/// browser sends one; HTTP/2 may split it in several). A malformed pair is
/// skipped, as browsers skip it.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .and_then(|c| c.value_raw())
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

/// Failed pairings: at most [`PER_ADDRESS`] from one client address and
/// [`OVERALL`] from all in [`WINDOW`]; past that, a wrong code is answered
/// 429 until the oldest failure leaves the window. A right code is never
/// held back (it is checked first), so whoever shares the operator's
/// address cannot lock the operator out; a code's 80 bits and 5 minutes
/// are what keep it from being guessed.
#[derive(Debug, Default)]
pub struct Limiter {
    failures: Mutex<Failures>,
    now: Ticks,
}

/// Where a [`Limiter`] reads the time: the monotonic clock, or a test's.
#[derive(Clone)]
pub struct Ticks(Arc<dyn Fn() -> Instant + Send + Sync>);

impl Ticks {
    /// A clock that reads `now`.
    pub fn from_fn(now: impl Fn() -> Instant + Send + Sync + 'static) -> Ticks {
        Ticks(Arc::new(now))
    }

    fn now(&self) -> Instant {
        (self.0)()
    }
}

impl Default for Ticks {
    fn default() -> Ticks {
        Ticks::from_fn(Instant::now)
    }
}

impl std::fmt::Debug for Ticks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ticks")
    }
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
    /// A limiter on `now`'s time.
    pub fn with_clock(now: Ticks) -> Limiter {
        Limiter {
            failures: Mutex::default(),
            now,
        }
    }

    /// Whether `address` may try a code now; else how long it waits.
    pub fn check(&self, address: IpAddr) -> Result<(), Duration> {
        let now = self.now.now();
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
        let now = self.now.now();
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
mod tests;
