-- The raw SQL ceiling with the ledger's writes (bench/pg_bench.sh, pgbench
-- -f): bench/serve_bench.cc's raw SQLite ceiling on PostgreSQL, one job at a
-- time. Claim transaction: take the oldest due run with FOR UPDATE SKIP
-- LOCKED, put a fencing token from a sequence on it, insert its attempt and
-- its `claimed` event. Complete transaction: the run's update fenced by the
-- token, the attempt closed, the `succeeded` event. Six statements and two
-- commits per job.
\set now 1900000000000
BEGIN;
UPDATE runs SET state = 'running', lease_token = nextval('bench_tokens'),
    lease_expires_at = :now::bigint + 3600000, lease_node = 'bench', attempts = attempts + 1,
    budget_attempts = budget_attempts + 1, budget_started_at = coalesce(budget_started_at, :now),
    next_attempt_at = NULL, updated_at = :now
  WHERE id = (SELECT id FROM runs WHERE state = 'pending' AND released = 1
              AND scheduled_at <= :now ORDER BY scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING id, lease_token AS token, job || '/' || partition || '/' || period AS run_key \gset
INSERT INTO attempts (run_id, number, fencing_token, node, started_at)
  VALUES (:id, 1, :token, 'bench', :now);
INSERT INTO events (at, type, job, run_id, run_key, actor, details)
  VALUES (:now, 'claimed', 'noop', :id, :run_key, 'bench',
          '{"attempt":1,"fencing_token":' || :token || ',"node":"bench"}');
COMMIT;
BEGIN;
UPDATE runs SET state = 'succeeded', reason = NULL, lease_token = NULL, lease_expires_at = NULL,
    lease_node = NULL, next_attempt_at = NULL, last_end_class = 'succeeded', updated_at = :now,
    finished_at = :now, released = 1, misfire_exempt = 1
  WHERE id = :id AND lease_token = :token AND state = 'running';
UPDATE attempts SET ended_at = :now, end_class = 'succeeded', exit_status = 0, step = 'work',
    log_path = '', output_tail = ''
  WHERE run_id = :id AND fencing_token = :token;
INSERT INTO events (at, type, job, run_id, run_key, actor, details)
  VALUES (:now, 'succeeded', 'noop', :id, :run_key, 'bench',
          '{"attempt":1,"end_class":"succeeded","exit_status":0,"fencing_token":' || :token || ',"step":"work"}');
COMMIT;
