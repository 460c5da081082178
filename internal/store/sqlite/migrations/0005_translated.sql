-- 0005: a request log records the translation that served it (docs/protocols.md):
-- "<client protocol>-><upstream protocol>", '' when the request passed
-- through in its own protocol.
ALTER TABLE request_logs ADD COLUMN translated TEXT NOT NULL DEFAULT '';
