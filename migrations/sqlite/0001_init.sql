-- agentd's event log on SQLite. Times are RFC 3339 UTC text with milliseconds (sortable).

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    title          TEXT,
    model          TEXT,
    system         TEXT,
    tools          TEXT,            -- JSON array of tool names, NULL = all
    max_steps      INTEGER,
    active_turn_id TEXT,            -- the running turn; NULL when idle (the turn lock)
    last_seq       INTEGER NOT NULL DEFAULT 0,
    usage          TEXT NOT NULL DEFAULT '{}',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC);

CREATE TABLE turns (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    status          TEXT NOT NULL,  -- running | ended
    end_kind        TEXT,
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    first_seq       INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL,
    usage           TEXT NOT NULL DEFAULT '{}',
    error           TEXT,           -- JSON {code, message, status?}
    idempotency_key TEXT
);
CREATE INDEX turns_by_session ON turns (session_id, first_seq);
CREATE INDEX turns_running ON turns (status) WHERE status = 'running';
CREATE UNIQUE INDEX turns_idempotency ON turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT NOT NULL,
    type       TEXT NOT NULL,
    body       TEXT NOT NULL,       -- the whole envelope JSON
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
-- What derive_messages reads, without scanning every chunk of a long session.
CREATE INDEX events_conversation ON events (session_id, seq)
    WHERE type IN ('user/message', 'assistant/message', 'tool/result');
