//! [`AppError`]: every HTTP error, as `{"error":{"code","message",…}}` with a fitting status.

use agentd_engine::Error as EngineError;
use agentd_store::Error as StoreError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// An HTTP error response. Domain errors map to statuses in one place ([`From`] impls);
/// 5xx are logged with their detail and answered with a safe message.
#[derive(Debug)]
pub struct AppError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Extra fields of the `error` object, e.g. `active_turn_id`.
    extra: Map<String, Value>,
}

impl AppError {
    /// An error with this status, snake_case code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }
}

impl From<StoreError> for AppError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::SessionNotFound(_) | StoreError::TurnNotFound(_) => {
                Self::not_found(error.to_string())
            }
            StoreError::TurnInProgress { active_turn_id } => Self::new(
                StatusCode::CONFLICT,
                "turn_in_progress",
                format!("the session is running turn {active_turn_id}; wait for its turn/end or cancel it"),
            )
            .with("active_turn_id", json!(active_turn_id)),
            StoreError::TurnNotRunning(_) => {
                Self::new(StatusCode::CONFLICT, "turn_not_running", error.to_string())
            }
            StoreError::Corrupt(_)
            | StoreError::Database(_)
            | StoreError::Sqlite(_)
            | StoreError::Unavailable(_)
            | StoreError::Migrate(_) => {
                tracing::error!(%error, "store error");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the event store failed; try again",
                )
            }
        }
    }
}

impl From<EngineError> for AppError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Store(error) => error.into(),
            EngineError::Invalid(message) => Self::bad_request("invalid_request", message),
            EngineError::ShuttingDown => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down",
            ),
            EngineError::NotRunning(_) => {
                Self::new(StatusCode::CONFLICT, "turn_not_running", error.to_string())
            }
            EngineError::Workspace(error) => {
                tracing::error!(%error, "workspace error");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "workspace_error",
                    "the session workspace could not be changed",
                )
            }
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut error = self.extra;
        error.insert("code".to_owned(), Value::from(self.code));
        error.insert("message".to_owned(), Value::from(self.message));
        (self.status, axum::Json(json!({ "error": error }))).into_response()
    }
}
