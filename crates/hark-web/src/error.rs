//! A refusal as every route gives it: a status and `{code, message}`
//! (the socket's error codes, mapped to HTTP's), shared by the API and the
//! session checks.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hark_core::bridge::wire::WireError;
use hark_core::model::validate::Issue;
use serde::Serialize;

/// A refusal, as the page reads it: `{code, message}` (and the issues of
/// an answer that does not fit).
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) body: ErrorBody,
    pub(crate) retry_after: Option<Duration>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ErrorBody {
    pub(crate) code: String,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) issues: Vec<Issue>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                code: code.to_owned(),
                message: message.into(),
                issues: Vec::new(),
            },
            retry_after: None,
        }
    }

    /// Too many failures from here: try again after `wait` (429, with
    /// `Retry-After`); `what` names what failed.
    pub fn too_many(what: &str, wait: Duration) -> ApiError {
        let mut refusal = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            format!(
                "too many {what}; try again in {} s",
                wait.as_secs_f64().ceil()
            ),
        );
        refusal.retry_after = Some(wait);
        refusal
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "no session: pair this device with a code from `hark web pair`",
        )
    }

    /// A live session's cookie without its token: what a server on another
    /// port of this host (an agent's) is sent by the browser, and can
    /// replay. 401, as no session: the page pairs again.
    pub fn cookie_alone() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the session's cookie came without its token (X-CSRF-Token), which only the page \
             that paired keeps: a cookie alone opens nothing. Pair this device again with a \
             code from `hark web pair`",
        )
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn unavailable(e: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        )
    }
}

impl From<WireError> for ApiError {
    fn from(e: WireError) -> ApiError {
        let status =
            StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let code = serde_json::to_value(e.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unavailable".to_owned());
        ApiError {
            status,
            body: ErrorBody {
                code,
                message: e.message,
                issues: e.issues,
            },
            retry_after: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        if let Some(wait) = self.retry_after {
            let secs = wait.as_secs_f64().ceil() as u64;
            if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    }
}
