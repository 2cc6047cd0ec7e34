-- The floor under any ledger on cronledger's schema (bench/pg_bench.sh,
-- pgbench -f; not the product): ledger_batched.sql with the runs row alone,
-- 32 runs per claim statement and per completion statement, each
-- completion fenced by its token. No attempts, steps or events: what a
-- queue on the `runs` table, with its run-key UNIQUE and the indexes the
-- ledger's readers need, costs before anything is recorded about a run.
\set now 1900000000000
\set batch 32
BEGIN;
WITH c AS (
  SELECT id FROM runs WHERE state = 'pending' AND released = 1 AND scheduled_at <= :now::bigint
  ORDER BY scheduled_at, id LIMIT :batch FOR UPDATE SKIP LOCKED
), u AS (
  UPDATE runs r SET state = 'running', lease_token = nextval('bench_tokens'),
      lease_expires_at = :now::bigint + 3600000, lease_node = 'bench', attempts = r.attempts + 1,
      budget_attempts = r.budget_attempts + 1,
      budget_started_at = coalesce(r.budget_started_at, :now::bigint), next_attempt_at = NULL,
      updated_at = :now::bigint
    FROM c WHERE r.id = c.id
    RETURNING r.id, r.lease_token, r.job, r.job || '/' || r.partition || '/' || r.period AS run_key
)
SELECT array_agg(id) AS ids, array_agg(lease_token) AS tokens FROM u \gset
COMMIT;
BEGIN;
WITH f AS (
  UPDATE runs r SET state = 'succeeded', reason = NULL, lease_token = NULL,
      lease_expires_at = NULL, lease_node = NULL, next_attempt_at = NULL,
      last_end_class = 'succeeded', updated_at = :now::bigint, finished_at = :now::bigint,
      released = 1, misfire_exempt = 1
    FROM unnest(:ids::bigint[], :tokens::bigint[]) AS x(id, token)
    WHERE r.id = x.id AND r.lease_token = x.token AND r.state = 'running'
    RETURNING r.id, x.token, r.job, r.job || '/' || r.partition || '/' || r.period AS run_key
)
SELECT count(*) AS completed FROM f;
COMMIT;
