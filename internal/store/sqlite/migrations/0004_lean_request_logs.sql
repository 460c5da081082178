-- 0004: request logs keep only the index the gateway reads.
--
-- Every proxied request inserts a row, and in SQLite each index costs a
-- B-tree insert per row: with four secondary indexes a row cost about 32 µs
-- of CPU, a third of the gateway's own cost per request at full load. The
-- gateway reads the newest logs only (request_logs_time); look-ups by id,
-- key or upstream are for an operator's ad-hoc queries, which can afford a
-- scan or an index created by hand.
DROP INDEX IF EXISTS request_logs_upstream_time;
DROP INDEX IF EXISTS request_logs_key_time;
DROP INDEX IF EXISTS request_logs_id;
