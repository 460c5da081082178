-- 0007: a request log carries its OpenTelemetry trace id (docs/tracing.md):
-- 32 hex digits when tracing is on, '' when it is off.
ALTER TABLE request_logs ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
