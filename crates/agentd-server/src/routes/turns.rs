//! `/sessions/{id}/turns`: start a turn (optionally streaming it), read and cancel turns.

use agentd_engine::StartTurn;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::error::AppError;
use crate::extract::{AppJson, parse_id};
use crate::sse::{self, StreamUntil};

/// Longest accepted `Idempotency-Key`, in bytes.
const MAX_KEY_LEN: usize = 255;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/sessions/{id}/turns", get(list).post(start))
        .route("/sessions/{id}/turns/{turn_id}", get(read))
        .route("/sessions/{id}/turns/{turn_id}/cancel", post(cancel))
}

/// Body of `POST /sessions/{id}/turns`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    content: String,
}

async fn start(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    AppJson(body): AppJson<StartBody>,
) -> Result<Response, AppError> {
    let session_id = parse_id("session id", &id)?;
    let key = idempotency_key(&headers)?;
    let started = state
        .engine
        .start_turn(session_id, &body.content, key.as_deref())
        .await?;
    let (status, turn) = match started {
        StartTurn::Started(turn) => (StatusCode::ACCEPTED, turn),
        StartTurn::Existing(turn) => (StatusCode::OK, turn),
    };
    if sse::wants_event_stream(&headers) {
        let after = turn.first_seq.saturating_sub(1);
        return Ok(sse::stream(&state, session_id, after, StreamUntil::TurnEnd));
    }
    let location = format!("/sessions/{session_id}/turns/{}", turn.id);
    Ok((status, [(header::LOCATION, location)], Json(turn)).into_response())
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, AppError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().ok().map(str::trim).unwrap_or_default();
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(AppError::bad_request(
            "invalid_idempotency_key",
            format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters"),
        ));
    }
    Ok(Some(key.to_owned()))
}

async fn list(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    let session_id = parse_id("session id", &id)?;
    let turns = state.engine.store().list_turns(session_id).await?;
    Ok(Json(json!({ "turns": turns })).into_response())
}

async fn read(
    State(state): State<AppState>,
    Path((id, turn_id)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let session_id = parse_id("session id", &id)?;
    let turn_id = parse_id("turn id", &turn_id)?;
    Ok(Json(state.engine.store().turn(session_id, turn_id).await?).into_response())
}

async fn cancel(
    State(state): State<AppState>,
    Path((id, turn_id)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let session_id = parse_id("session id", &id)?;
    let turn_id = parse_id("turn id", &turn_id)?;
    let turn = state.engine.cancel_turn(session_id, turn_id).await?;
    Ok((StatusCode::ACCEPTED, Json(turn)).into_response())
}
