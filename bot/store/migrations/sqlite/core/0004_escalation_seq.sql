-- A position that only grows (AUTOINCREMENT never reuses one), so `escalations tail` sees every record.
CREATE TABLE escalations_new (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
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
INSERT INTO escalations_new
    (id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at)
    SELECT id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at
    FROM escalations ORDER BY rowid;
DROP TABLE escalations;
ALTER TABLE escalations_new RENAME TO escalations;
CREATE INDEX escalations_at ON escalations (at);
CREATE INDEX escalations_user ON escalations (user_key);
