-- Runs of once-a-period jobs already claimed (e.g. retention:2026-11-29), so only one replica does each.
CREATE TABLE job_runs (name TEXT PRIMARY KEY, claimed_at DOUBLE PRECISION NOT NULL);
