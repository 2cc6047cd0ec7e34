-- PostgreSQL's spelling of sqlite/migrations/005_actions.sql: the same tables, columns,
-- constraints and indexes (BIGINT for INTEGER, identities for row ids, the
-- byte order of SQLite's text comparisons: COLLATE "C").

-- Operator actions over many runs (backfill, rerun, trigger) are one event
-- each, with the list of run keys in its details (docs/gaps.md). Additive:
-- a binary with schema version 4 still uses the ledger as is.

-- The runs an action event covers, so that each run's history shows it.
CREATE TABLE event_runs (
  event_id BIGINT NOT NULL REFERENCES events(id),
  run_id BIGINT NOT NULL,
  PRIMARY KEY (run_id, event_id)
);

-- The action that last put the run back to work (operator or scanner);
-- every attempt claimed after it links to it.
ALTER TABLE runs ADD COLUMN action_event_id BIGINT;
ALTER TABLE attempts ADD COLUMN action_event_id BIGINT;
