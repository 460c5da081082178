-- 0002: spend totals.
--
-- One row per (scope, name, period_start): the USD spent by an upstream
-- (scope 'upstream') or a client key (scope 'key') in the period starting at
-- period_start (the gateway writes one row per UTC day and sums days into
-- months). Writers add to usd with an upsert, never replace it.

CREATE TABLE spend (
    scope        text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    period_start timestamptz      NOT NULL,
    usd          double precision NOT NULL,
    updated_at   timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, name, period_start)
);

CREATE INDEX spend_period_start ON spend (period_start);
