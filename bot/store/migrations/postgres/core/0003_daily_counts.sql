-- Anonymous daily counters.
CREATE TABLE daily_counts (
    day TEXT NOT NULL,
    name TEXT NOT NULL,
    value BIGINT NOT NULL,
    PRIMARY KEY (day, name)
);
