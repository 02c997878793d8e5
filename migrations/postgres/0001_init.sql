-- agentd's event log on Postgres. Ids, times (RFC 3339 UTC with milliseconds, sortable) and
-- JSON are text, as on SQLite, so both backends share one row mapping.

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    title          TEXT,
    model          TEXT,
    system         TEXT,
    tools          TEXT,            -- JSON array of tool names, NULL = all
    max_steps      BIGINT,
    active_turn_id TEXT,            -- the running turn; NULL when idle (the turn lock)
    last_seq       BIGINT NOT NULL DEFAULT 0,
    usage          TEXT NOT NULL DEFAULT '{}',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC);

CREATE TABLE turns (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    status           TEXT NOT NULL,  -- running | ended
    end_kind         TEXT,
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    first_seq        BIGINT NOT NULL,
    last_seq         BIGINT NOT NULL,
    usage            TEXT NOT NULL DEFAULT '{}',
    error            TEXT,
    idempotency_key  TEXT,
    lease_expires_at TEXT
);
CREATE INDEX turns_by_session ON turns (session_id, first_seq);
CREATE INDEX turns_running ON turns (status) WHERE status = 'running';
CREATE UNIQUE INDEX turns_idempotency ON turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    turn_id    TEXT NOT NULL,
    type       TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_conversation ON events (session_id, seq)
    WHERE type IN ('user/message', 'assistant/message', 'tool/result');
