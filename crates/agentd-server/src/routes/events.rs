//! `GET /sessions/{id}/events`: the log as SSE (replay, then live) or as a JSON page.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::AppState;
use crate::error::AppError;
use crate::extract::{AppQuery, parse_id};
use crate::sse::{self, StreamUntil};

/// Default and largest page of the JSON form.
const DEFAULT_LIMIT: u32 = 500;
const MAX_LIMIT: u32 = 5000;

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/sessions/{id}/events", get(events))
}

#[derive(Debug, Deserialize)]
struct EventsQuery {
    after: Option<u64>,
    follow: Option<bool>,
    limit: Option<u32>,
}

async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<EventsQuery>,
) -> Result<Response, AppError> {
    let session_id = parse_id("session id", &id)?;
    // Fail with a 404 now rather than inside a stream that already said 200.
    state.engine.store().session(session_id).await?;
    let after = match last_event_id(&headers)? {
        Some(id) => id,
        None => query.after.unwrap_or(0),
    };
    if !sse::wants_event_stream(&headers) && wants_json(&headers) {
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let page = state
            .engine
            .store()
            .load(session_id, after, Some(limit))
            .await?;
        return Ok(json_page(&page, after));
    }
    let until = if query.follow.unwrap_or(true) {
        StreamUntil::Forever
    } else {
        StreamUntil::CaughtUp
    };
    Ok(sse::stream(&state, session_id, after, until))
}

/// `Last-Event-ID` as a seq; 400 when present and not a number.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, AppError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        AppError::bad_request(
            "invalid_last_event_id",
            format!("Last-Event-ID must be an event seq, got {text:?}"),
        )
    })
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

/// `{"events":[…],"last_seq":N}` built from the stored JSON without re-serialising it.
/// `last_seq` is the cursor for the next page: the page's last seq, or `after` when the page
/// is empty (so a client polling at the end of the log stays there).
fn json_page(page: &[agentd_store::StoredEvent], after: u64) -> Response {
    let mut body = String::from("{\"events\":[");
    for (i, event) in page.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&event.json);
    }
    body.push_str("],\"last_seq\":");
    body.push_str(&page.last().map_or(after, |e| e.seq).to_string());
    body.push('}');
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
