//! The two clocks of one request: the overall deadline (`request_timeout`, from the moment the
//! request starts until its last byte) and the idle limit (`idle_timeout`, the longest wait
//! for the response headers or for the next read of the body).

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use tokio::time::{Instant, timeout_at};

use crate::Error;

/// The limits of one request, fixed when it starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// When the whole request must be over; `None` if `request_timeout` is too large to add.
    end: Option<Instant>,
    request_timeout: Duration,
    idle_timeout: Duration,
}

impl Limits {
    /// Starts the overall clock now.
    pub(crate) fn start(request_timeout: Duration, idle_timeout: Duration) -> Self {
        Limits {
            end: Instant::now().checked_add(request_timeout),
            request_timeout,
            idle_timeout,
        }
    }

    /// Runs `step` (one wait for headers or for one read) within both limits; on expiry
    /// returns [`Error::Timeout`] naming the limit that ran out.
    pub(crate) async fn within<F: Future>(&self, step: F) -> Result<F::Output, Error> {
        let idle_end = Instant::now().checked_add(self.idle_timeout);
        let (at, idle) = match (idle_end, self.end) {
            (Some(idle_end), Some(end)) if end <= idle_end => (Some(end), false),
            (Some(idle_end), _) => (Some(idle_end), true),
            (None, end) => (end, false),
        };
        let Some(at) = at else {
            return Ok(step.await);
        };
        timeout_at(at, step).await.map_err(|_| {
            Error::Timeout(if idle {
                format!(
                    "no data from the provider for {:?} (idle_timeout)",
                    self.idle_timeout
                )
            } else {
                format!(
                    "the request took longer than {:?} (request_timeout)",
                    self.request_timeout
                )
            })
        })
    }

    /// `body` with every read held to both limits. Ends after the first error.
    pub(crate) fn body<S>(self, body: S) -> impl Stream<Item = Result<Bytes, Error>>
    where
        S: Stream<Item = reqwest::Result<Bytes>>,
    {
        stream::unfold(Some(Box::pin(body)), move |body| async move {
            let mut body = body?;
            match self.within(body.next()).await {
                Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(body))),
                Ok(Some(Err(err))) => Some((Err(Error::reading(err)), None)),
                Ok(None) => None,
                Err(timeout) => Some((Err(timeout), None)),
            }
        })
    }
}
