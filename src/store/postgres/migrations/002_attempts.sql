-- PostgreSQL's spelling of sqlite/migrations/002_attempts.sql: the same tables, columns,
-- constraints and indexes (BIGINT for INTEGER, identities for row ids, the
-- byte order of SQLite's text comparisons: COLLATE "C").

-- Claims, leases and fencing tokens; attempts; step states.

-- One monotonically increasing sequence of fencing tokens for the whole
-- ledger: every claim takes the next one.
CREATE TABLE fencing (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  last_token BIGINT NOT NULL
);
INSERT INTO fencing (id, last_token) VALUES (1, 0);

-- While a run is running: the current token, its lease and the node.
ALTER TABLE runs ADD COLUMN lease_token BIGINT;
ALTER TABLE runs ADD COLUMN lease_expires_at BIGINT;
ALTER TABLE runs ADD COLUMN lease_node TEXT COLLATE "C";
-- Backoff: a pending run is not claimable before this instant.
ALTER TABLE runs ADD COLUMN next_attempt_at BIGINT;
-- The retry budget: attempts and the first start since the last operator
-- retry (max_attempts and max_retry_duration count from here).
ALTER TABLE runs ADD COLUMN budget_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN budget_started_at BIGINT;
ALTER TABLE runs ADD COLUMN last_end_class TEXT COLLATE "C";

CREATE INDEX runs_lease ON runs (state, lease_expires_at);
-- Overlap: the earlier runs of one partition.
CREATE INDEX runs_partition ON runs (job, partition, scheduled_at);

CREATE TABLE attempts (
  run_id BIGINT NOT NULL REFERENCES runs(id),
  number BIGINT NOT NULL,
  fencing_token BIGINT NOT NULL UNIQUE,
  node TEXT COLLATE "C" NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT,
  end_class TEXT COLLATE "C",
  exit_status BIGINT,
  step TEXT COLLATE "C",
  log_path TEXT COLLATE "C",
  output_tail TEXT COLLATE "C",
  PRIMARY KEY (run_id, number)
);

CREATE TABLE run_steps (
  run_id BIGINT NOT NULL REFERENCES runs(id),
  step TEXT COLLATE "C" NOT NULL,
  position BIGINT NOT NULL,
  state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
  attempt BIGINT,
  updated_at BIGINT,
  PRIMARY KEY (run_id, step)
);
