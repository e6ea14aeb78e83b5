-- Reminders re-sent to the operators' chat for an imminent escalation nobody acknowledged, one row each.
CREATE TABLE escalation_reminders (
    escalation_id TEXT NOT NULL REFERENCES escalations (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (escalation_id, number)
);
