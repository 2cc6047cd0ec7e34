-- Recording less (bench/pg_bench.sh, pgbench -f; not the product, the
-- measure of the question asked in docs/benchmarks.md): ledger_batched.sql
-- for a single-step job whose step leaves no row of its own and no events
-- of its own: the runs row, the attempt, `claimed` and `succeeded`. 32 runs
-- per claim statement and per completion statement.
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
), a AS (
  INSERT INTO attempts (run_id, number, fencing_token, node, started_at)
    SELECT id, 1, lease_token, 'bench', :now::bigint FROM u
), e AS (
  INSERT INTO events (at, type, job, run_id, run_key, actor, details)
    SELECT :now::bigint, t.type, u.job, u.id, u.run_key, 'bench',
           CASE t.type WHEN 'claimed'
             THEN '{"attempt":1,"fencing_token":' || u.lease_token || ',"node":"bench"}'
             ELSE '{"attempt":1,"step":"work"}' END
    FROM u CROSS JOIN (VALUES ('claimed')) AS t(type)
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
), a AS (
  UPDATE attempts t SET ended_at = :now::bigint, end_class = 'succeeded', exit_status = 0,
      step = 'work', log_path = '', output_tail = ''
    FROM f WHERE t.run_id = f.id AND t.fencing_token = f.token
), e AS (
  INSERT INTO events (at, type, job, run_id, run_key, actor, details)
    SELECT :now::bigint, t.type, f.job, f.id, f.run_key, 'bench',
           CASE t.type WHEN 'succeeded'
             THEN '{"attempt":1,"end_class":"succeeded","exit_status":0,"fencing_token":' || f.token || ',"step":"work"}'
             ELSE '{"attempt":1,"step":"work"}' END
    FROM f CROSS JOIN (VALUES ('succeeded')) AS t(type)
)
SELECT count(*) AS completed FROM f;
COMMIT;
