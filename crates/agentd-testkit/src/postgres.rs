//! [`TestDb`]: a fresh Postgres database per test.

use sqlx::Connection;
use uuid::Uuid;

/// The server the tests use: `AGENTD_TEST_POSTGRES_URL`, default
/// `postgres://postgres@127.0.0.1:5432/postgres` (CI starts it).
pub fn admin_url() -> String {
    std::env::var("AGENTD_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A fresh, uniquely named database, dropped when this guard goes.
pub struct TestDb {
    /// Connect here.
    pub url: String,
    name: String,
    admin: String,
}

impl TestDb {
    /// Creates the database; panics when Postgres does not answer.
    pub async fn create() -> Self {
        let admin = admin_url();
        let name = format!("agentd_test_{}", Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .expect("Postgres must run for these tests (see .ci/run)");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let base = admin
            .rsplit_once('/')
            .map_or(admin.as_str(), |(base, _)| base);
        Self {
            url: format!("{base}/{name}"),
            name,
            admin,
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Best effort, on a thread of its own: Drop cannot await.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                        let _ =
                            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                                .execute(&mut conn)
                                .await;
                    }
                });
            }
        })
        .join();
    }
}
