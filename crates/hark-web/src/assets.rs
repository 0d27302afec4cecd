//! The pages: every file under `ui/src` (the desktop's own page code),
//! embedded in the binary, and the headers every response carries.

use axum::body::Body;
use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;

/// `ui/src`, less the TypeScript declarations (the checker's, not the page's).
#[derive(Embed)]
#[folder = "../../ui/src"]
#[exclude = "*.ts"]
struct Pages;

/// What a page may load and run: only its own files, no inline script or
/// style, never in a frame.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `GET /`: the page the app shows.
pub async fn index() -> Response {
    file("index.html")
}

/// `GET /PATH`: a file of `ui/src`.
pub async fn page(Path(path): Path<String>) -> Response {
    file(&path)
}

fn file(path: &str) -> Response {
    match Pages::get(path) {
        Some(found) => {
            let mime = found.metadata.mimetype();
            let mime = if mime.starts_with("text/") || mime.ends_with("javascript") {
                format!("{mime}; charset=utf-8")
            } else {
                mime.to_owned()
            };
            let mut response = Body::from(found.data.into_owned()).into_response();
            let headers = response.headers_mut();
            if let Ok(mime) = HeaderValue::from_str(&mime) {
                headers.insert(header::CONTENT_TYPE, mime);
            }
            // Always revalidated: a new hark serves its new pages at once.
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// The names of the embedded files.
pub fn names() -> impl Iterator<Item = std::borrow::Cow<'static, str>> {
    Pages::iter()
}

/// Adds the headers every response carries: the CSP, no framing, no
/// sniffing, no referrer; `no-store` on the API; HSTS over TLS.
pub async fn secure_headers(secure: bool, request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if secure {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    response
}
