-- Groups already told that the bot only talks in private.
CREATE TABLE told_groups (chat_key TEXT PRIMARY KEY, told_at REAL NOT NULL) WITHOUT ROWID;
