-- Which crisis track a person's follow-up is on.
ALTER TABLE sessions ADD COLUMN crisis_track TEXT;
