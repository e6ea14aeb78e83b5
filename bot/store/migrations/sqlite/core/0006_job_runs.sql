-- Runs of once-a-period jobs already claimed (e.g. retention:2026-11-29), so only one process does each.
CREATE TABLE job_runs (name TEXT PRIMARY KEY, claimed_at REAL NOT NULL) WITHOUT ROWID;
