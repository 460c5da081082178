-- 0007: a request log carries the prompt cache's tokens and its cost
-- (docs/reference.md#request-cost): cost_usd at the model's price on the
-- upstream that served it, unpriced when that upstream has no price for
-- the model.
ALTER TABLE request_logs ADD COLUMN cache_read_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cost_usd double precision NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN unpriced boolean NOT NULL DEFAULT false;
