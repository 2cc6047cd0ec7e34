-- PostgreSQL's spelling of sqlite/migrations/003_partial_indexes.sql: the same tables, columns,
-- constraints and indexes (BIGINT for INTEGER, identities for row ids, the
-- byte order of SQLite's text comparisons: COLLATE "C").

-- Cheaper state changes. A claim or a completion used to rewrite five
-- indexes that contained `state`; most runs are finished and never looked up
-- by state again. Partial indexes hold only the rows a lookup needs, so a
-- state change touches the few it enters or leaves, and finished history
-- stays out of them. (Queries must spell the same literal conditions for
-- SQLite to use them.)

DROP INDEX runs_due;
DROP INDEX runs_job_state;
DROP INDEX runs_job_date;
DROP INDEX runs_job_success;
DROP INDEX runs_lease;
DROP INDEX runs_partition;

-- Claimable runs, oldest first (claims, the due-run lookup).
CREATE INDEX runs_due ON runs (scheduled_at) WHERE state = 'pending' AND released = 1;
-- Planned runs not yet judged by the release pass.
CREATE INDEX runs_unreleased ON runs (job, scheduled_at)
  WHERE state = 'pending' AND released = 0;
-- Runs in flight: overlap per partition, concurrency and in-flight counts.
CREATE INDEX runs_active ON runs (job, partition, scheduled_at)
  WHERE state = 'pending' OR state = 'running';
-- Leases, for the reaper.
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';
-- Ends that need someone's attention, for the lag of status.
CREATE INDEX runs_attention ON runs (job, scheduled_at)
  WHERE state = 'failed' OR state = 'unknown' OR state = 'awaiting_approval';
CREATE INDEX runs_skipped ON runs (job, scheduled_at) WHERE state = 'skipped';
-- The last success of a job.
CREATE INDEX runs_succeeded ON runs (job, finished_at) WHERE state = 'succeeded';
-- Per-job counts by business date (the state is read from the row).
CREATE INDEX runs_job_date ON runs (job, business_date);
