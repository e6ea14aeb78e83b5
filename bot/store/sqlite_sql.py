"""The SQLite backend's statements, each a constant (``bot.store.sqlite`` runs them)."""

BUSY_TIMEOUT_MS = 5000
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",  # FULL around the escalation log's writes (``SqliteStore._transaction``)
    f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    "PRAGMA secure_delete=ON",  # deleted rows (an answered update's words) are overwritten with zeros
)
SCRUB_WAIT_MS = 100
"""Milliseconds the WAL scrub waits for another process using the database; it tries again after the next removal."""
WAIT_BRIEFLY, WAIT_AS_USUAL = f"PRAGMA busy_timeout={SCRUB_WAIT_MS}", f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}"
ESCALATION_COLUMNS = (
    "id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at"
)
"""``codec.FIELDS`` as SQL (a test holds them equal); written out so every statement here is a constant."""
LOAD_SESSION = (
    "SELECT first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track"
    " FROM sessions WHERE user_key = ?"
)
SAVE_SESSION = (
    "INSERT OR REPLACE INTO sessions"
    " (user_key, first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ADD_COUNTS = (
    "INSERT INTO daily_counts (day, name, value) VALUES (?, ?, ?)"
    " ON CONFLICT (day, name) DO UPDATE SET value = value + excluded.value"
)
INSERT_ESCALATION = (
    "INSERT OR IGNORE INTO escalations"
    " (id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
FEED = (
    "SELECT seq, id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by,"
    " acked_at FROM escalations WHERE seq > ? ORDER BY seq LIMIT ?"
)
ESCALATION_FILTER = "(? IS NULL OR at >= ?) AND (? IS NULL OR level = ?) AND (? = 0 OR acked_by IS NULL)"
UNANSWERED = "SELECT update_id, raw FROM updates WHERE raw IS NOT NULL ORDER BY update_id"
ANSWER = "UPDATE updates SET raw = NULL, lane = NULL, answered_at = ? WHERE update_id = ? AND answered_at IS NULL"
LANE = "SELECT update_id, raw FROM updates WHERE lane = ? AND raw IS NOT NULL ORDER BY update_id"
WAITING = (
    "SELECT DISTINCT lane FROM updates WHERE raw IS NOT NULL AND lane IS NOT NULL AND received_at < ? ORDER BY lane"
)
UNACKED_REMINDERS = (
    "SELECT r.escalation_id, r.at FROM escalation_reminders r JOIN escalations e ON e.id = r.escalation_id"
    " WHERE e.acked_by IS NULL ORDER BY r.escalation_id, r.number"
)
REMEMBER_MESSAGE = "INSERT OR IGNORE INTO message_ids (chat_key, message_id, at) VALUES (?, ?, ?)"
