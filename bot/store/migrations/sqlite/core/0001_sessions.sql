-- People's sessions, under the keyed hash of their id.
CREATE TABLE sessions (
    user_key TEXT PRIMARY KEY,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    last_intent TEXT,
    shown TEXT NOT NULL DEFAULT '[]',
    crisis_level TEXT,
    crisis_at REAL
) WITHOUT ROWID;
CREATE INDEX sessions_last_seen ON sessions (last_seen);
