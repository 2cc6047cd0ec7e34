-- Operator actions over many runs (backfill, rerun, trigger) are one event
-- each, with the list of run keys in its details (docs/gaps.md). Additive:
-- a binary with schema version 4 still uses the ledger as is.

-- The runs an action event covers, so that each run's history shows it.
CREATE TABLE event_runs (
  event_id INTEGER NOT NULL REFERENCES events(id),
  run_id INTEGER NOT NULL,
  PRIMARY KEY (run_id, event_id)
) WITHOUT ROWID;

-- The action that last put the run back to work (operator or scanner);
-- every attempt claimed after it links to it.
ALTER TABLE runs ADD COLUMN action_event_id INTEGER;
ALTER TABLE attempts ADD COLUMN action_event_id INTEGER;
