-- The ledger: jobs and their versions, partition membership, planned
-- occurrences, runs (one per run key) and the append-only event log.
-- Instants are INTEGER milliseconds since the Unix epoch, UTC.

CREATE TABLE jobs (
  name TEXT PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0,
  paused_at INTEGER,
  paused_by TEXT,
  pause_reason TEXT,
  planned_through INTEGER,
  current_version INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);

CREATE TABLE job_versions (
  job TEXT NOT NULL REFERENCES jobs(name),
  version INTEGER NOT NULL,
  effective_from INTEGER NOT NULL,
  definition TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (job, version)
);

CREATE TABLE partitions (
  job TEXT NOT NULL REFERENCES jobs(name),
  partition TEXT NOT NULL,
  active_from INTEGER NOT NULL,
  active_to INTEGER,
  PRIMARY KEY (job, partition, active_from)
);

CREATE TABLE occurrences (
  job TEXT NOT NULL REFERENCES jobs(name),
  scheduled_at INTEGER NOT NULL,
  local_time TEXT NOT NULL,
  dst TEXT,
  job_version INTEGER NOT NULL,
  tzdata TEXT NOT NULL,
  planned_at INTEGER NOT NULL,
  PRIMARY KEY (job, scheduled_at)
);

CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  job TEXT NOT NULL REFERENCES jobs(name),
  partition TEXT NOT NULL,
  period TEXT NOT NULL,
  business_date TEXT NOT NULL,
  scheduled_at INTEGER NOT NULL,
  job_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed', 'unknown',
                                       'skipped', 'awaiting_approval', 'cancelled')),
  reason TEXT,
  released INTEGER NOT NULL DEFAULT 0,
  misfire_exempt INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER,
  UNIQUE (job, partition, period)
);
-- The due-run lookup: released pending runs by time; the release pass:
-- unreleased pending runs by job and time.
CREATE INDEX runs_due ON runs (state, released, scheduled_at);
CREATE INDEX runs_job_state ON runs (job, state, scheduled_at);
-- Per-job statistics by business date, and finished runs by job.
CREATE INDEX runs_job_date ON runs (job, business_date, state);
CREATE INDEX runs_job_success ON runs (job, state, finished_at);

CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  type TEXT NOT NULL,
  job TEXT,
  run_id INTEGER,
  run_key TEXT,
  actor TEXT NOT NULL,
  reason TEXT,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_job ON events (job, id);
CREATE INDEX events_run ON events (run_id, id);

CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
