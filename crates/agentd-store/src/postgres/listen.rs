//! `LISTEN agentd_events`: appends by other replicas, as a [`ChangeStream`].

use std::time::Duration;

use futures_util::stream;
use sqlx::postgres::{PgListener, PgPool};
use uuid::Uuid;

use super::CHANNEL;
use crate::error::Result;
use crate::{Change, ChangeStream};

/// A stream of appends on the database. A lost connection yields [`Change::Resync`] (the
/// listener reconnects by itself; notifications sent meanwhile are lost, so readers re-read).
pub(super) async fn changes(pool: &PgPool) -> Result<ChangeStream> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    let changes = stream::unfold(listener, |mut listener| async move {
        let change = match listener.try_recv().await {
            Ok(Some(notification)) => parse(notification.payload()).unwrap_or(Change::Resync),
            Ok(None) => Change::Resync,
            Err(error) => {
                tracing::warn!(%error, "lost the change listener; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                Change::Resync
            }
        };
        Some((change, listener))
    });
    Ok(Box::pin(changes))
}

/// `<session_id>:<seq>`.
fn parse(payload: &str) -> Option<Change> {
    let (session, seq) = payload.split_once(':')?;
    Some(Change::Appended {
        session_id: Uuid::parse_str(session).ok()?,
        seq: seq.parse().ok()?,
    })
}
