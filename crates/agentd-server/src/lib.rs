//! agentd's HTTP API (DESIGN.md §3): axum routes, SSE, JSON errors.
//!
//! Owns the wire: paths, status codes, headers, the error body, the SSE framing. Everything
//! else it asks of the engine. [`serve`] is the one entry point, for the binary and for every
//! integration test alike.

mod error;
mod extract;
mod perimeter;
mod routes;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use agentd_engine::Engine;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, StatusCode};
use axum::middleware;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;

pub use error::AppError;
pub use perimeter::Perimeter;

/// Largest accepted request body, in bytes (1 MiB).
pub const BODY_LIMIT: usize = 1 << 20;

/// How long a request body may go without sending anything before the request fails with
/// 408 (30 s): a client that announces a body and never sends it must not hold a
/// connection and a task forever.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Runs turns and serves events.
    pub engine: Engine,
    /// Cancelled when the server shuts down: open SSE streams end and the listener stops.
    pub shutdown: CancellationToken,
    /// How long an SSE stream may stay silent before a `: keep-alive` comment (15 s).
    pub keep_alive: Duration,
    /// Who may call: token, `Host` and `Origin` rules.
    pub perimeter: Arc<Perimeter>,
    /// The tool sandbox in force (`bwrap`, `landlock`, `none`), reported by `/healthz`.
    pub sandbox: Arc<str>,
    /// How a tool call's process count is capped (`cgroup-v2`, `cgroup-v1`, `rlimit`),
    /// reported by `/healthz`.
    pub process_cap: Arc<str>,
    /// How long a request body may stall ([`BODY_TIMEOUT`]).
    pub body_timeout: Duration,
}

impl AppState {
    /// State with the default keep-alive interval (15 s), body timeout ([`BODY_TIMEOUT`]), no
    /// token, no CORS origins, any `Host`, sandbox reported as `none` and the process cap as
    /// `rlimit`. Set the fields to change them.
    pub fn new(engine: Engine, shutdown: CancellationToken) -> Self {
        Self {
            engine,
            shutdown,
            keep_alive: Duration::from_secs(15),
            perimeter: Arc::new(Perimeter::default()),
            sandbox: Arc::from("none"),
            process_cap: Arc::from("rlimit"),
            body_timeout: BODY_TIMEOUT,
        }
    }
}

/// The whole API as one router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(routes::sessions::router())
        .merge(routes::turns::router())
        .merge(routes::events::router())
        .merge(routes::health::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(RequestBodyTimeoutLayer::new(state.body_timeout))
        .layer(middleware::from_fn_with_state(state.clone(), perimeter::require_token))
        .layer(state.perimeter.cors())
        .layer(middleware::from_fn_with_state(state.clone(), perimeter::guard_origin))
        .layer(
            // The span names the path only: the query may carry `access_token`.
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                tracing::info_span!("request", method = %request.method(), path = %request.uri().path())
            }),
        )
        .with_state(state)
}

/// Serves the API on `listener` until `state.shutdown` is cancelled, then stops accepting,
/// ends open streams and returns once in-flight requests are done. Sets `TCP_NODELAY` on every
/// accepted socket so small SSE frames leave at once. Errors: the listener's IO errors.
pub async fn serve(listener: TcpListener, state: AppState) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

async fn not_found() -> AppError {
    AppError::not_found("no such route")
}

async fn method_not_allowed() -> AppError {
    AppError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}
