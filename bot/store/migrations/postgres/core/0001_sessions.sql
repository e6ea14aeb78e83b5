-- People's sessions, under the keyed hash of their id; shown passages as JSON text, as in SQLite.
CREATE TABLE sessions (
    user_key TEXT PRIMARY KEY,
    first_seen DOUBLE PRECISION NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    last_intent TEXT,
    shown TEXT NOT NULL DEFAULT '[]',
    crisis_level TEXT,
    crisis_at DOUBLE PRECISION,
    crisis_track TEXT
);
CREATE INDEX sessions_last_seen ON sessions (last_seen);
