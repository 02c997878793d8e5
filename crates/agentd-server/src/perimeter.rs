//! The perimeter: who may call the API at all (issue 4). Bearer-token auth, the `Host`
//! check against DNS rebinding, and the `Origin` allowlist for browsers (CORS).
//!
//! Order of checks for every request: `Host`, then `Origin`, then the token (`/healthz`
//! needs none). It must not log the token or the `access_token` query parameter.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::AppState;
use crate::error::AppError;

/// Who may call the API. Built once at start-up.
#[derive(Clone, Default)]
pub struct Perimeter {
    /// The bearer token every route but `/healthz` requires; `None` = no auth (loopback only).
    token: Option<String>,
    /// Hosts (`name` or `name:port`, lowercase) accepted in the `Host` header; `None` = any.
    hosts: Option<HashSet<String>>,
    /// Origins (`scheme://host[:port]`) allowed to call from a browser.
    origins: Vec<HeaderValue>,
}

impl fmt::Debug for Perimeter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Perimeter")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .finish()
    }
}

impl Perimeter {
    /// The perimeter of a server bound to `addr`.
    ///
    /// - `token`: required as `Authorization: Bearer <token>` (or `?access_token=` on the SSE
    ///   route, since `EventSource` cannot set headers).
    /// - `allowed_hosts`: extra `Host` values; on a loopback address, `localhost`, `127.0.0.1`
    ///   and `[::1]` (with the port) are always allowed and nothing else unless listed; on a
    ///   wildcard or public address any `Host` is accepted unless this list is non-empty.
    /// - `cors_origins`: origins a browser page may call from (none by default).
    ///
    /// Errors: a message naming an origin that is not a valid header value.
    pub fn new(
        addr: SocketAddr,
        token: Option<String>,
        allowed_hosts: &[String],
        cors_origins: &[String],
    ) -> Result<Self, String> {
        let mut hosts: HashSet<String> = allowed_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let port = addr.port();
        let restrict = if addr.ip().is_loopback() {
            for name in ["localhost", "127.0.0.1", "[::1]"] {
                hosts.insert(format!("{name}:{port}"));
                if port == 80 {
                    hosts.insert(name.to_owned());
                }
            }
            hosts.insert(addr.to_string());
            true
        } else {
            !hosts.is_empty()
        };
        let origins = cors_origins
            .iter()
            .map(|o| o.trim().trim_end_matches('/'))
            .filter(|o| !o.is_empty())
            .map(|o| HeaderValue::from_str(o).map_err(|_| format!("invalid CORS origin {o:?}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            token: token.filter(|t| !t.is_empty()),
            hosts: restrict.then_some(hosts),
            origins,
        })
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The CORS layer for the allowed origins (answers their preflights).
    pub(crate) fn cors(&self) -> CorsLayer {
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(self.origins.clone()))
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                "last-event-id".parse().unwrap_or(header::ACCEPT),
                "idempotency-key".parse().unwrap_or(header::ACCEPT),
            ])
            .expose_headers([header::LOCATION])
    }

    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(hosts) = &self.hosts else {
            return true;
        };
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| hosts.contains(&h.to_ascii_lowercase()))
    }

    /// A browser request from a page of another origin that is not on the list.
    fn origin_refused(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return false;
        };
        if self.origins.iter().any(|o| o == origin) {
            return false;
        }
        // Same origin: the page was served by this server under the Host it called.
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest);
        !(host.is_some() && host == origin_host)
    }

    fn token_accepted(&self, request: &Request) -> bool {
        let Some(expected) = &self.token else {
            return true;
        };
        let from_header = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        // Only the SSE route takes the token in the query: EventSource cannot set headers.
        let sse = request.method() == Method::GET && request.uri().path().ends_with("/events");
        let from_query = request.uri().query().filter(|_| sse).and_then(|q| {
            q.split('&')
                .find_map(|pair| pair.strip_prefix("access_token="))
        });
        from_header
            .or(from_query)
            .is_some_and(|given| bool::from(given.as_bytes().ct_eq(expected.as_bytes())))
    }
}

/// Outermost middleware: refuses a foreign `Host` or `Origin` before anything else runs,
/// CORS preflights included.
pub(crate) async fn guard_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let perimeter = &state.perimeter;
    if !perimeter.host_allowed(request.headers()) {
        return AppError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "this Host is not served here (set AGENTD_ALLOWED_HOSTS to add it)",
        )
        .into_response();
    }
    if perimeter.origin_refused(request.headers()) {
        return AppError::new(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "this Origin may not call the API (set AGENTD_CORS_ORIGINS to allow it)",
        )
        .into_response();
    }
    next.run(request).await
}

/// Inner middleware (after CORS has answered preflights): the bearer token.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let perimeter = &state.perimeter;
    let open = request.uri().path() == "/healthz";
    if !open && !perimeter.token_accepted(&request) {
        let mut response = AppError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send Authorization: Bearer <AGENTD_TOKEN>",
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    next.run(request).await
}
