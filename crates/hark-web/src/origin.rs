//! The surface's own host and origin: a request for another host (a DNS
//! rebinding page) is refused, and so is an API request from another
//! origin (a cross-site form or fetch), with 403, before any handler runs.
//!
//! The `Host` header is parsed as an [`Authority`] (the `http` crate's,
//! which axum's requests are made of) and its host by the `url` crate
//! (IPv6 literals in their brackets, names lowercased); the `Origin` header
//! as a URL, compared as the [`Origin`] tuple a browser means (scheme, host,
//! port; a default port is the same as none). `Origin: null` and anything
//! that is not a URL are no origin of ours.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use url::{Host, Origin, Url};

use crate::Web;
use crate::error::ApiError;

/// Refuses a request for another host than the surface's and an API
/// request from another origin (see the module's doc).
pub async fn same_origin(State(web): State<Arc<Web>>, request: Request, next: Next) -> Response {
    if let Err(refusal) = check(&web, request.headers(), request.uri().path()) {
        return refusal.into_response();
    }
    next.run(request).await
}

/// A `Host` header, parsed: a name or an address, and the port if it says one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RequestHost {
    host: Host<String>,
    port: Option<u16>,
}

impl RequestHost {
    fn of(headers: &HeaderMap) -> Result<RequestHost, ApiError> {
        let given = headers
            .get(header::HOST)
            .ok_or_else(|| ApiError::forbidden("the request names no host"))?;
        let unreadable = || {
            ApiError::forbidden(format!(
                "the request's host {:?} is not a host and port",
                String::from_utf8_lossy(given.as_bytes())
            ))
        };
        let authority = Authority::try_from(given.as_bytes()).map_err(|_| unreadable())?;
        let host = Host::parse(authority.host()).map_err(|_| unreadable())?;
        Ok(RequestHost {
            host,
            port: authority.port_u16(),
        })
    }

    /// Its port, or `scheme`'s default when it names none.
    fn port_for(&self, scheme: &str) -> u16 {
        self.port
            .unwrap_or(if scheme == "https" { 443 } else { 80 })
    }
}

impl std::fmt::Display for RequestHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

pub(crate) fn check(web: &Web, headers: &HeaderMap, path: &str) -> Result<(), ApiError> {
    let host = RequestHost::of(headers)?;
    if !host_allowed(web, &host) {
        return Err(ApiError::forbidden(format!(
            "this surface is not served as {:?}; add its origin to `[web] origins` if a proxy serves it so",
            host.to_string()
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
    if let Some(given) = headers.get(header::ORIGIN) {
        let given = String::from_utf8_lossy(given.as_bytes());
        let origin = Url::parse(&given).map(|url| url.origin());
        let scheme = if web.secure { "https" } else { "http" };
        let own = Origin::Tuple(scheme.to_owned(), host.host.clone(), host.port_for(scheme));
        let allowed = origin.is_ok_and(|o| o == own || web.origins.contains(&o));
        if !allowed {
            return Err(ApiError::forbidden(format!(
                "requests from {given:?} are refused (cross-origin)"
            )));
        }
    }
    Ok(())
}

/// Whether `host` names this surface: its listen address or a loopback
/// name with its port, a configured origin's host and port, or any name
/// with its port when it listens on every address.
fn host_allowed(web: &Web, host: &RequestHost) -> bool {
    let on_port = host.port == Some(web.listen.port());
    let loopback = match &host.host {
        Host::Domain(name) => name == "localhost",
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    };
    let listened = match (&host.host, web.listen.ip()) {
        (Host::Ipv4(ip), IpAddr::V4(listen)) => *ip == listen,
        (Host::Ipv6(ip), IpAddr::V6(listen)) => *ip == listen,
        _ => false,
    };
    let served = (loopback || listened) && on_port;
    let proxied = web.origins.iter().any(|origin| match origin {
        Origin::Tuple(scheme, origin_host, port) => {
            *origin_host == host.host && *port == host.port_for(scheme)
        }
        Origin::Opaque(_) => false,
    });
    // Listening on every address: any name with the port (TLS, or the
    // operator's --insecure-http, was required for it).
    let wildcard = web.listen.ip().is_unspecified() && on_port;
    served || proxied || wildcard
}

#[cfg(test)]
mod tests;
