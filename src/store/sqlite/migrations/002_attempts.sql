-- Claims, leases and fencing tokens; attempts; step states.

-- One monotonically increasing sequence of fencing tokens for the whole
-- ledger: every claim takes the next one.
CREATE TABLE fencing (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_token INTEGER NOT NULL
);
INSERT INTO fencing (id, last_token) VALUES (1, 0);

-- While a run is running: the current token, its lease and the node.
ALTER TABLE runs ADD COLUMN lease_token INTEGER;
ALTER TABLE runs ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE runs ADD COLUMN lease_node TEXT;
-- Backoff: a pending run is not claimable before this instant.
ALTER TABLE runs ADD COLUMN next_attempt_at INTEGER;
-- The retry budget: attempts and the first start since the last operator
-- retry (max_attempts and max_retry_duration count from here).
ALTER TABLE runs ADD COLUMN budget_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN budget_started_at INTEGER;
ALTER TABLE runs ADD COLUMN last_end_class TEXT;

CREATE INDEX runs_lease ON runs (state, lease_expires_at);
-- Overlap: the earlier runs of one partition.
CREATE INDEX runs_partition ON runs (job, partition, scheduled_at);

CREATE TABLE attempts (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  number INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL UNIQUE,
  node TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  end_class TEXT,
  exit_status INTEGER,
  step TEXT,
  log_path TEXT,
  output_tail TEXT,
  PRIMARY KEY (run_id, number)
);

CREATE TABLE run_steps (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  step TEXT NOT NULL,
  position INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
  attempt INTEGER,
  updated_at INTEGER,
  PRIMARY KEY (run_id, step)
);
