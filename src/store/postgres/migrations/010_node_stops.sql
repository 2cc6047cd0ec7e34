-- PostgreSQL's spelling of sqlite/migrations/010_node_stops.sql.

-- What tells a node's processes apart: its clean stop (`stopped_at`; NULL
-- while it runs, cleared by its next beat), and the host and process id of
-- each beat. Additive: a binary with schema version 9 neither writes nor
-- reads them.
ALTER TABLE nodes ADD COLUMN stopped_at BIGINT;
ALTER TABLE nodes ADD COLUMN host TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN pid BIGINT NOT NULL DEFAULT 0;
