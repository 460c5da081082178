-- 0003: a change counter for configuration.
--
-- config_version holds one row whose version goes up with every row
-- inserted, updated or deleted in upstreams, keys or routes, by this process
-- or any other (an operator's sqlite3 shell included). Store.Watch polls it
-- to tell when to reload: unlike max(updated_at), it also moves on deletes.

CREATE TABLE config_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);

INSERT INTO config_version (id, version) VALUES (1, 0);

CREATE TRIGGER upstreams_inserted AFTER INSERT ON upstreams
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER upstreams_updated AFTER UPDATE ON upstreams
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER upstreams_deleted AFTER DELETE ON upstreams
BEGIN UPDATE config_version SET version = version + 1; END;

CREATE TRIGGER keys_inserted AFTER INSERT ON keys
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER keys_updated AFTER UPDATE ON keys
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER keys_deleted AFTER DELETE ON keys
BEGIN UPDATE config_version SET version = version + 1; END;

CREATE TRIGGER routes_inserted AFTER INSERT ON routes
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER routes_updated AFTER UPDATE ON routes
BEGIN UPDATE config_version SET version = version + 1; END;
CREATE TRIGGER routes_deleted AFTER DELETE ON routes
BEGIN UPDATE config_version SET version = version + 1; END;
