-- The Telegram update journal: an update is written here before Telegram is told it arrived,
-- its text (raw) is set to NULL once it is answered, and its id stays a while to deduplicate.
CREATE TABLE updates (
    update_id BIGINT PRIMARY KEY,
    received_at DOUBLE PRECISION NOT NULL,
    raw TEXT,
    answered_at DOUBLE PRECISION
);
CREATE INDEX updates_answered_at ON updates (answered_at);
