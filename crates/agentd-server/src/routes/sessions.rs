//! `/sessions`: create, list, read, delete; and the derived messages of a session.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::error::AppError;
use crate::extract::{AppJson, AppQuery, parse_id};

/// Default and largest page of `GET /sessions`.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/sessions", get(list).post(create))
        .route("/sessions/{id}", get(read).delete(delete))
        .route("/sessions/{id}/messages", get(messages))
}

/// Body of `POST /sessions`; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateSession {
    title: Option<String>,
    model: Option<String>,
    system: Option<String>,
    tools: Option<Vec<String>>,
    max_steps: Option<u32>,
}

async fn create(
    State(state): State<AppState>,
    body: Option<AppJson<CreateSession>>,
) -> Result<Response, AppError> {
    let body = body.map(|AppJson(body)| body).unwrap_or_default();
    let session = state
        .engine
        .create_session(agentd_store::NewSession {
            title: body.title,
            model: body.model,
            system: body.system,
            tools: body.tools,
            max_steps: body.max_steps,
        })
        .await?;
    let location = format!("/sessions/{}", session.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(session),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    limit: Option<u32>,
    before: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let before = query
        .before
        .as_deref()
        .map(|id| parse_id("before", id))
        .transpose()?;
    let sessions = state.engine.store().list_sessions(limit, before).await?;
    let next_before = (sessions.len() == limit as usize)
        .then(|| sessions.last().map(|s| s.id))
        .flatten();
    Ok(Json(json!({ "sessions": sessions, "next_before": next_before })).into_response())
}

async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    let id = parse_id("session id", &id)?;
    Ok(Json(state.engine.store().session(id).await?).into_response())
}

async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let id = parse_id("session id", &id)?;
    state.engine.delete_session(id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn messages(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let id = parse_id("session id", &id)?;
    let messages = state.engine.messages(id).await?;
    Ok(Json(json!({ "messages": messages })).into_response())
}
