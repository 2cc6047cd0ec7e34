-- Schema 9: the same state checks, spelled so that SQLite evaluates them
-- without building a table. SQLite evaluates `state IN (three or more
-- literals)` by filling a temporary B-tree with the list, every time the
-- statement runs: the CHECK of runs.state, the CHECK of run_steps.state and
-- the condition of the partial index runs_updated did that on every change
-- of a run's or a step's state, about a third of the time a claim and a
-- completion took (docs/benchmarks.md, session 13). The same conditions as
-- chains of `=` cost a few comparisons.
--
-- SQLite cannot change a CHECK in place: both tables are rebuilt as its
-- documentation says (sqlite.org/lang_altertable.html, "other kinds of
-- table schema changes"): a new table with the same columns in the same
-- order, the rows copied with their ids, the old table dropped, the new one
-- renamed, its indexes made again. The store runs migrations with foreign
-- keys off and checks them afterwards (sqlite_store.cc). Additive for older
-- binaries: the columns, their meaning and the rows are unchanged.

CREATE TABLE runs_rebuilt (
  id INTEGER PRIMARY KEY,
  job TEXT NOT NULL REFERENCES jobs(name),
  partition TEXT NOT NULL,
  period TEXT NOT NULL,
  business_date TEXT NOT NULL,
  scheduled_at INTEGER NOT NULL,
  job_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'running' OR state = 'succeeded'
                             OR state = 'failed' OR state = 'unknown' OR state = 'skipped'
                             OR state = 'awaiting_approval' OR state = 'cancelled'),
  reason TEXT,
  released INTEGER NOT NULL DEFAULT 0,
  misfire_exempt INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER,
  lease_token INTEGER,
  lease_expires_at INTEGER,
  lease_node TEXT,
  next_attempt_at INTEGER,
  budget_attempts INTEGER NOT NULL DEFAULT 0,
  budget_started_at INTEGER,
  last_end_class TEXT,
  action_event_id INTEGER,
  UNIQUE (job, partition, period)
);
INSERT INTO runs_rebuilt (id, job, partition, period, business_date, scheduled_at, job_version,
                          state, reason, released, misfire_exempt, attempts, created_at,
                          updated_at, finished_at, lease_token, lease_expires_at, lease_node,
                          next_attempt_at, budget_attempts, budget_started_at, last_end_class,
                          action_event_id)
  SELECT id, job, partition, period, business_date, scheduled_at, job_version, state, reason,
         released, misfire_exempt, attempts, created_at, updated_at, finished_at, lease_token,
         lease_expires_at, lease_node, next_attempt_at, budget_attempts, budget_started_at,
         last_end_class, action_event_id
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_rebuilt RENAME TO runs;

-- The indexes of schema 8, as migrations 003 and 006 made them; the last
-- one's condition is spelled as a chain too (RunPurge spells the same).
CREATE INDEX runs_due ON runs (scheduled_at) WHERE state = 'pending' AND released = 1;
CREATE INDEX runs_unreleased ON runs (job, scheduled_at)
  WHERE state = 'pending' AND released = 0;
CREATE INDEX runs_active ON runs (job, partition, scheduled_at)
  WHERE state = 'pending' OR state = 'running';
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';
CREATE INDEX runs_attention ON runs (job, scheduled_at)
  WHERE state = 'failed' OR state = 'unknown' OR state = 'awaiting_approval';
CREATE INDEX runs_skipped ON runs (job, scheduled_at) WHERE state = 'skipped';
CREATE INDEX runs_succeeded ON runs (job, finished_at) WHERE state = 'succeeded';
CREATE INDEX runs_job_date ON runs (job, business_date);
CREATE INDEX runs_updated ON runs (updated_at)
  WHERE state = 'succeeded' OR state = 'failed' OR state = 'skipped' OR state = 'cancelled';

CREATE TABLE run_steps_rebuilt (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  step TEXT NOT NULL,
  position INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'running' OR state = 'succeeded'
                             OR state = 'failed'),
  attempt INTEGER,
  updated_at INTEGER,
  PRIMARY KEY (run_id, step)
);
INSERT INTO run_steps_rebuilt (run_id, step, position, state, attempt, updated_at)
  SELECT run_id, step, position, state, attempt, updated_at FROM run_steps;
DROP TABLE run_steps;
ALTER TABLE run_steps_rebuilt RENAME TO run_steps;
