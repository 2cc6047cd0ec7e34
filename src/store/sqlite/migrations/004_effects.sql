-- Effects (external side effects under an idempotency key, scoped to the
-- job) and checkpoints (watermarks per run or per job+partition). Additive:
-- a binary with schema version 1 still uses the rest of the ledger as is.
-- See docs/effects.md.

-- One row per (job, key): started -> committed | failed, and failed ->
-- started again when a later attempt redoes it. A `started` row whose
-- starting attempt no longer holds its run's lease is *in doubt*.
CREATE TABLE effects (
  id INTEGER PRIMARY KEY,
  job TEXT NOT NULL REFERENCES jobs(name),
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('started', 'committed', 'failed')),
  exit_status INTEGER,
  result TEXT,                  -- the command's stdout, capped by the caller
  -- The run and attempt that started it (the latest start, after a redo).
  run_id INTEGER NOT NULL REFERENCES runs(id),
  run_key TEXT NOT NULL,
  started_attempt INTEGER NOT NULL,
  started_token INTEGER NOT NULL,
  -- Which call of that attempt began it: the same call asking again (a
  -- retried request) goes on; another call of the same attempt finds it in
  -- doubt (the first call's outcome is unknown to it).
  started_request TEXT NOT NULL DEFAULT '',
  -- The attempt that committed or failed it; settled_by instead when an
  -- operator resolved it (`cronledger resolve --effect`).
  settled_attempt INTEGER,
  settled_token INTEGER,
  settled_by TEXT,
  -- The run and attempt that last found it in doubt (it may be another run
  -- of the job than the one that started it).
  doubt_run_id INTEGER REFERENCES runs(id),
  doubt_token INTEGER,
  started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (job, key)
);
CREATE INDEX effects_run ON effects (run_id);

-- Every attempt that found an effect in doubt (several runs of a job may):
-- each such attempt must settle it or end its run `unknown`. `started_token`
-- names the start it was found in doubt (a redo after `failed` is a new one).
CREATE TABLE effect_doubts (
  effect_id INTEGER NOT NULL REFERENCES effects(id),
  started_token INTEGER NOT NULL,
  run_id INTEGER NOT NULL,
  token INTEGER NOT NULL,
  found_at INTEGER NOT NULL,
  PRIMARY KEY (effect_id, token)
) WITHOUT ROWID;
CREATE INDEX effect_doubts_run ON effect_doubts (run_id, token);
CREATE INDEX effects_doubt ON effects (doubt_run_id) WHERE doubt_run_id IS NOT NULL;

-- A watermark: scope 'run' is keyed by run_id, scope 'partition' by (job,
-- partition) and shared by the partition's runs. job and partition are
-- filled in for both scopes; run_id only for scope 'run'.
CREATE TABLE checkpoints (
  scope TEXT NOT NULL CHECK (scope IN ('run', 'partition')),
  job TEXT NOT NULL REFERENCES jobs(name),
  partition TEXT NOT NULL,
  run_id INTEGER REFERENCES runs(id),
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  -- The attempt that wrote the current value.
  writer_run_id INTEGER NOT NULL REFERENCES runs(id),
  writer_token INTEGER NOT NULL,
  CHECK ((scope = 'run') = (run_id IS NOT NULL))
);
CREATE UNIQUE INDEX checkpoints_run ON checkpoints (run_id) WHERE scope = 'run';
CREATE UNIQUE INDEX checkpoints_partition ON checkpoints (job, partition)
  WHERE scope = 'partition';
