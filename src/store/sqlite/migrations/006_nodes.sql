-- The node heartbeat table: every `serve` says it is alive every few
-- seconds, so `status` and the dashboard can show which nodes are up and
-- which ran what (leases, attempts and events name the node). Additive: a
-- binary with schema version 5 still uses the ledger as is.
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  version TEXT NOT NULL,
  listen TEXT NOT NULL DEFAULT '',
  started_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL
);
-- Ledger retention deletes finished runs by their last change, and action
-- events once no run refers to them.
CREATE INDEX runs_updated ON runs (updated_at)
  WHERE state IN ('succeeded', 'failed', 'skipped', 'cancelled');
CREATE INDEX event_runs_event ON event_runs (event_id);
