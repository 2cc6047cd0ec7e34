-- What set-based statements could do (bench/pg_bench.sh, pgbench -f; not the
-- product): the ledger's writes for a batch of 32 runs in one claim
-- statement and one completion statement. Claim transaction: take 32 due
-- runs with FOR UPDATE SKIP LOCKED, put a fencing token from a sequence on
-- each, insert their attempts and steps and their `claimed` and
-- `step_started` events. Complete transaction: every run's update fenced by
-- its own token, its attempt closed, its step succeeded, its
-- `step_succeeded` and `succeeded` events. Everything cronledger writes for
-- a run (the runs row, the attempt, the step, four events), in two
-- statements and two commits per 32 runs.
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
), s AS (
  INSERT INTO run_steps (run_id, step, position, state, attempt, updated_at)
    SELECT id, 'work', 0, 'running', 1, :now::bigint FROM u
), e AS (
  INSERT INTO events (at, type, job, run_id, run_key, actor, details)
    SELECT :now::bigint, t.type, u.job, u.id, u.run_key, 'bench',
           CASE t.type WHEN 'claimed'
             THEN '{"attempt":1,"fencing_token":' || u.lease_token || ',"node":"bench"}'
             ELSE '{"attempt":1,"step":"work"}' END
    FROM u CROSS JOIN (VALUES ('claimed'), ('step_started')) AS t(type)
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
), s AS (
  UPDATE run_steps st SET state = 'succeeded', attempt = 1, updated_at = :now::bigint
    FROM f WHERE st.run_id = f.id AND st.step = 'work'
), e AS (
  INSERT INTO events (at, type, job, run_id, run_key, actor, details)
    SELECT :now::bigint, t.type, f.job, f.id, f.run_key, 'bench',
           CASE t.type WHEN 'succeeded'
             THEN '{"attempt":1,"end_class":"succeeded","exit_status":0,"fencing_token":' || f.token || ',"step":"work"}'
             ELSE '{"attempt":1,"step":"work"}' END
    FROM f CROSS JOIN (VALUES ('step_succeeded'), ('succeeded')) AS t(type)
)
SELECT count(*) AS completed FROM f;
COMMIT;
