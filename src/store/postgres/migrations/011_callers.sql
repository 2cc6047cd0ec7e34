-- PostgreSQL's spelling of sqlite/migrations/011_callers.sql.

-- Who claimed an attempt: the API token an external worker's claim was
-- made with (empty for a node's own executor and for attempts claimed
-- before this schema).
ALTER TABLE attempts ADD COLUMN claimant TEXT COLLATE "C" NOT NULL DEFAULT '';
-- The name an operator action was done for (`--by`), beside its actor, the
-- caller. NULL: none given.
ALTER TABLE events ADD COLUMN on_behalf_of TEXT COLLATE "C";
-- Additive: a binary with schema version 10 neither writes nor reads them.
