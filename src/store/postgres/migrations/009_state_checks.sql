-- PostgreSQL's counterpart of sqlite/migrations/009_state_checks.sql.
-- PostgreSQL evaluates `state IN (...)` against its list directly, so its
-- CHECKs stay as they are. Only the partial index runs_updated is made
-- again with its condition spelled as SQLite's now is, the literal
-- condition RunPurge (shared by both engines) spells.
DROP INDEX runs_updated;
CREATE INDEX runs_updated ON runs (updated_at)
  WHERE state = 'succeeded' OR state = 'failed' OR state = 'skipped' OR state = 'cancelled';
