-- 0001: configuration tables and request logs.
--
-- Configuration rows keep the full config object as JSON in `spec` (the
-- source of truth when read back) plus a few columns to query by. Upstream
-- API keys live only in upstreams.api_key, never inside spec. Client keys
-- are stored as their SHA-256 only. Timestamps are UTC RFC 3339 text set by
-- SQLite; request_logs.time is Unix nanoseconds (NULL for the zero time).

CREATE TABLE upstreams (
    name       TEXT    NOT NULL PRIMARY KEY,
    provider   TEXT    NOT NULL,
    base_url   TEXT    NOT NULL,
    priority   INTEGER NOT NULL,
    weight     INTEGER NOT NULL,
    active     INTEGER NOT NULL,
    api_key    TEXT    NOT NULL,
    spec       TEXT    NOT NULL CHECK (json_valid(spec)),
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

CREATE TABLE keys (
    name       TEXT    NOT NULL PRIMARY KEY,
    key_sha256 TEXT    NOT NULL,
    rpm        INTEGER NOT NULL,
    spec       TEXT    NOT NULL CHECK (json_valid(spec)),
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

CREATE INDEX keys_key_sha256 ON keys (key_sha256);

CREATE TABLE routes (
    model      TEXT    NOT NULL PRIMARY KEY,
    strategy   TEXT    NOT NULL,
    retries    INTEGER NOT NULL,
    spec       TEXT    NOT NULL CHECK (json_valid(spec)),
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

CREATE TABLE request_logs (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL,
    time          INTEGER,
    key           TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    upstream      TEXT    NOT NULL,
    status        INTEGER NOT NULL,
    attempts      INTEGER NOT NULL,
    stream        INTEGER NOT NULL,
    latency_ns    INTEGER NOT NULL,
    ttft_ns       INTEGER NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    error_class   TEXT    NOT NULL,
    error         TEXT    NOT NULL
);

CREATE INDEX request_logs_time ON request_logs (time);
CREATE INDEX request_logs_upstream_time ON request_logs (upstream, time);
CREATE INDEX request_logs_key_time ON request_logs (key, time);
CREATE INDEX request_logs_id ON request_logs (id);
