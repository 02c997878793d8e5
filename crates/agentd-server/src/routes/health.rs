//! `/healthz` (the process answers), `/readyz` (the database answers), `/openapi.yaml`.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::AppState;
use crate::error::AppError;

/// The API description served at `/openapi.yaml`.
const OPENAPI: &str = include_str!("../../../../openapi.yaml");

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/openapi.yaml", get(openapi))
}

/// `{"status":"ok","version","sandbox","process_cap","auth"}`: the process answers; which
/// tool sandbox and process cap are in force; whether a token is required.
async fn healthz(State(state): State<AppState>) -> Response {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "sandbox": &*state.sandbox,
        "process_cap": &*state.process_cap,
        "auth": if state.perimeter.has_token() { "token" } else { "none" },
    }))
    .into_response()
}

async fn readyz(State(state): State<AppState>) -> Result<Response, AppError> {
    state.engine.store().ping().await.map_err(|error| {
        tracing::warn!(%error, "readiness check failed");
        AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the database does not answer",
        )
    })?;
    Ok(Json(json!({ "status": "ready" })).into_response())
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI).into_response()
}
