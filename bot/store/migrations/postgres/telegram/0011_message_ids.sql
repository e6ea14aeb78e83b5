-- Message ids (never text) of a chat's last 48 hours, so /erase can delete them on Telegram.
CREATE TABLE message_ids (
    chat_key TEXT NOT NULL,
    message_id BIGINT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (chat_key, message_id)
);
CREATE INDEX message_ids_at ON message_ids (at);
