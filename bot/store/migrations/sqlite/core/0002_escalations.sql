-- The escalation log: no message text unless excerpts are opted in.
CREATE TABLE escalations (
    id TEXT PRIMARY KEY,
    at REAL NOT NULL,
    user_key TEXT NOT NULL,
    level TEXT NOT NULL,
    category TEXT NOT NULL,
    rule TEXT NOT NULL,
    channel TEXT NOT NULL,
    resources TEXT NOT NULL,
    excerpt TEXT,
    acked_by TEXT,
    acked_at REAL,
    alerted_at REAL
);
CREATE INDEX escalations_at ON escalations (at);
CREATE INDEX escalations_user ON escalations (user_key);
