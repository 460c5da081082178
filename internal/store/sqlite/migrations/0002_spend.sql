-- 0002: spend totals.
--
-- One row per (scope, name, period_start): the USD spent by an upstream
-- (scope 'upstream') or a client key (scope 'key') in the period starting at
-- period_start, Unix seconds UTC (the gateway writes one row per UTC day and
-- sums days into months). Writers add to usd with an upsert, never replace it.

CREATE TABLE spend (
    scope        TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    period_start INTEGER NOT NULL,
    usd          REAL    NOT NULL,
    updated_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (scope, name, period_start)
) WITHOUT ROWID;

CREATE INDEX spend_period_start ON spend (period_start);
