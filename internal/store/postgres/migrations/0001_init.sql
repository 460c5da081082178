-- 0001: configuration tables and request logs.
--
-- Configuration rows keep the full config object as JSONB in `spec` (the
-- source of truth when read back) plus a few columns to query by. Upstream
-- API keys live only in upstreams.api_key, never inside spec. Client keys
-- are stored as their SHA-256 only. Ids and names use the "C" collation so
-- that lists are in byte order, as with SQLite, whatever the database's
-- locale. Every table lives in the first schema of the search_path.

CREATE TABLE upstreams (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    provider   text        NOT NULL,
    base_url   text        NOT NULL,
    priority   integer     NOT NULL,
    weight     integer     NOT NULL,
    active     boolean     NOT NULL,
    api_key    text        NOT NULL,
    spec       jsonb       NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE keys (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    key_sha256 text        NOT NULL,
    rpm        integer     NOT NULL,
    spec       jsonb       NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX keys_key_sha256 ON keys (key_sha256);

CREATE TABLE routes (
    model      text COLLATE "C" NOT NULL PRIMARY KEY,
    strategy   text        NOT NULL,
    retries    integer     NOT NULL,
    spec       jsonb       NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- request_logs.time is when the request arrived, to the microsecond (the
-- zero Go time is 0001-01-01 UTC); time_nsec holds the 0–999 nanoseconds
-- past that microsecond, so that a log reads back to the nanosecond.
CREATE TABLE request_logs (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text        NOT NULL,
    time          timestamptz NOT NULL,
    time_nsec     smallint    NOT NULL CHECK (time_nsec BETWEEN 0 AND 999),
    key           text        NOT NULL,
    model         text        NOT NULL,
    upstream      text        NOT NULL,
    status        integer     NOT NULL,
    attempts      integer     NOT NULL,
    stream        boolean     NOT NULL,
    latency_ns    bigint      NOT NULL,
    ttft_ns       bigint      NOT NULL,
    input_tokens  bigint      NOT NULL,
    output_tokens bigint      NOT NULL,
    error_class   text        NOT NULL,
    error         text        NOT NULL
);

CREATE INDEX request_logs_time ON request_logs (time);
CREATE INDEX request_logs_upstream_time ON request_logs (upstream, time);
CREATE INDEX request_logs_key_time ON request_logs (key, time);
CREATE INDEX request_logs_id ON request_logs (id);
