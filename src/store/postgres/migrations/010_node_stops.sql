-- PostgreSQL's spelling of sqlite/migrations/010_node_stops.sql.

-- A node that stops cleanly says so (`stopped_at`; NULL while it runs,
-- cleared by its next beat). Additive: a binary with schema version 9
-- neither writes nor reads it.
ALTER TABLE nodes ADD COLUMN stopped_at BIGINT;
