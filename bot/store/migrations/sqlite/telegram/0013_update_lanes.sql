-- Each unanswered update's chat (its lane), so replicas sharing the journal answer a chat's updates in order;
-- set to NULL with the text once the update is answered.
ALTER TABLE updates ADD COLUMN lane INTEGER;
CREATE INDEX updates_waiting ON updates (lane, update_id) WHERE raw IS NOT NULL;
