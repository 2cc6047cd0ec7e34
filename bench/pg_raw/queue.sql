-- The raw SQL ceiling, smallest form (bench/pg_bench.sh, pgbench -f): per job,
-- a claim that takes the oldest due run with FOR UPDATE SKIP LOCKED and puts
-- a fencing token from a sequence on it, then a completion fenced by that
-- token. Two statements, each its own transaction (two commits per job). No
-- attempts, steps or events: a queue's minimum on cronledger's runs table.
\set now 1900000000000
UPDATE runs SET state = 'running', lease_token = nextval('bench_tokens'),
    lease_expires_at = :now::bigint + 3600000, lease_node = 'bench', attempts = attempts + 1,
    updated_at = :now
  WHERE id = (SELECT id FROM runs WHERE state = 'pending' AND released = 1
              AND scheduled_at <= :now ORDER BY scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING id, lease_token AS token \gset
UPDATE runs SET state = 'succeeded', lease_token = NULL, lease_expires_at = NULL,
    lease_node = NULL, last_end_class = 'succeeded', updated_at = :now, finished_at = :now
  WHERE id = :id AND lease_token = :token AND state = 'running';
