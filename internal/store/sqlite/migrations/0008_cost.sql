-- 0008: a request log carries the prompt cache's tokens and its cost
-- (docs/reference.md#request-cost): cost_usd at the model's price on the
-- upstream that served it, unpriced (1) when that upstream has no price
-- for the model.
ALTER TABLE request_logs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
