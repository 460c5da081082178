-- 0005: a request log lists its upstream attempts (docs/routing.md#5-the-attempt-loop): retries
-- and hedges, each with its timing and outcome, as a JSON array; '' when
-- no attempt was made.
ALTER TABLE request_logs ADD COLUMN tried text NOT NULL DEFAULT '';
