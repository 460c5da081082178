-- 0007: request logs are looked up by id again.
--
-- GET /admin/api/requests/{id} and the dashboard's request view read one
-- log by its request id (Store.RequestLog); without an index that is a scan
-- of the whole table. 0004 dropped this index to save its B-tree insert per
-- row, and the cost is real: BenchmarkInsertRequestLogs (batches of 100, 2
-- shared cores) went from about 12.5 µs to 37 µs per log with it. The other
-- indexes 0004 dropped stay dropped.
CREATE INDEX IF NOT EXISTS request_logs_id ON request_logs (id);
