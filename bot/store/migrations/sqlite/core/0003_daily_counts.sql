-- Anonymous daily counters.
CREATE TABLE daily_counts (
    day TEXT NOT NULL,
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (day, name)
) WITHOUT ROWID;
