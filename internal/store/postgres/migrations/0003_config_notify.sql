-- 0003: change notification for configuration.
--
-- Every insert, update, delete or truncate of upstreams, keys or routes, by
-- a gateway or by an operator's SQL, raises config_version.version and
-- sends NOTIFY switchyard_config with the schema's name as payload, both at
-- commit. Store.Watch LISTENs on the channel (notifications are per
-- database, so it ignores other schemas' payloads) and polls the counter as
-- a fallback: unlike max(updated_at), the counter also moves on deletes and
-- cannot be overtaken by a transaction that commits late.

CREATE TABLE config_version (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    version bigint  NOT NULL
);

INSERT INTO config_version (id, version) VALUES (true, 0);

-- The function qualifies config_version with the schema of the changed
-- table, so that it works whatever the search_path of the session.
CREATE FUNCTION switchyard_config_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %I.config_version SET version = version + 1', TG_TABLE_SCHEMA);
    PERFORM pg_notify('switchyard_config', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER upstreams_changed AFTER INSERT OR UPDATE OR DELETE ON upstreams
    FOR EACH ROW EXECUTE FUNCTION switchyard_config_changed();
CREATE TRIGGER upstreams_truncated AFTER TRUNCATE ON upstreams
    FOR EACH STATEMENT EXECUTE FUNCTION switchyard_config_changed();
CREATE TRIGGER keys_changed AFTER INSERT OR UPDATE OR DELETE ON keys
    FOR EACH ROW EXECUTE FUNCTION switchyard_config_changed();
CREATE TRIGGER keys_truncated AFTER TRUNCATE ON keys
    FOR EACH STATEMENT EXECUTE FUNCTION switchyard_config_changed();
CREATE TRIGGER routes_changed AFTER INSERT OR UPDATE OR DELETE ON routes
    FOR EACH ROW EXECUTE FUNCTION switchyard_config_changed();
CREATE TRIGGER routes_truncated AFTER TRUNCATE ON routes
    FOR EACH STATEMENT EXECUTE FUNCTION switchyard_config_changed();
