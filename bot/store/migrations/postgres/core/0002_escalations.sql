-- The escalation log: no message text unless excerpts are opted in; seq only grows, for `escalations tail`.
CREATE TABLE escalations (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    at DOUBLE PRECISION NOT NULL,
    user_key TEXT NOT NULL,
    level TEXT NOT NULL,
    category TEXT NOT NULL,
    rule TEXT NOT NULL,
    channel TEXT NOT NULL,
    resources TEXT NOT NULL,
    excerpt TEXT,
    acked_by TEXT,
    acked_at DOUBLE PRECISION,
    alerted_at DOUBLE PRECISION
);
CREATE INDEX escalations_at ON escalations (at);
CREATE INDEX escalations_user ON escalations (user_key);
