//! Extractors whose rejections come back in our JSON error format, not axum's plain text.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::error::AppError;

/// `axum::Json` with [`AppError`] rejections: 415 without a JSON content type, 413 over the
/// body limit, 400 `invalid_json` for bad syntax or a body of the wrong shape.
pub struct AppJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AppJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match <axum::Json<T> as FromRequest<S>>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// An optional JSON body: `None` when the request has no body and no `Content-Type`.
impl<S: Send + Sync, T: DeserializeOwned> OptionalFromRequest<S> for AppJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        let headers = req.headers();
        let empty = !headers.contains_key(axum::http::header::CONTENT_TYPE)
            && headers
                .get(axum::http::header::CONTENT_LENGTH)
                .is_none_or(|len| len.as_bytes() == b"0");
        if empty {
            return Ok(None);
        }
        <Self as FromRequest<S>>::from_request(req, state)
            .await
            .map(Some)
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => AppError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with Content-Type: application/json",
        ),
        JsonRejection::BytesRejection(error) if timed_out(&error) => AppError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "the request body stopped arriving; send it whole",
        ),
        JsonRejection::BytesRejection(error) if error.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            AppError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is too large",
            )
        }
        other => AppError::bad_request("invalid_json", other.body_text()),
    }
}

/// Whether reading the body failed because it stalled (`tower_http`'s body timeout).
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        next = error.source();
    }
    false
}

/// `axum::extract::Query` with [`AppError`] rejections (400 `invalid_query`).
pub struct AppQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for AppQuery<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Self(value))
            .map_err(|rejection: QueryRejection| {
                AppError::bad_request("invalid_query", rejection.body_text())
            })
    }
}

/// Parses an id from a path segment: 400 `invalid_id` unless it is a UUID.
pub fn parse_id(what: &str, text: &str) -> Result<Uuid, AppError> {
    Uuid::parse_str(text).map_err(|_| {
        AppError::bad_request("invalid_id", format!("{what} must be a UUID, got {text:?}"))
    })
}
