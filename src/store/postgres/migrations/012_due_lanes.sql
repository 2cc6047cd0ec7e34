-- PostgreSQL's spelling of sqlite/migrations/012_due_lanes.sql.

-- When a pending run may be claimed (a planned run: its scheduled time; a
-- run triggered ahead of its occurrence: at once), and its claim lane (0:
-- the schedule's runs and an operator's trigger, retry or resolve; 1: runs
-- queued by a backfill, a rerun or an approval, claimed after every due run
-- of lane 0).
ALTER TABLE runs ADD COLUMN due_at BIGINT;
ALTER TABLE runs ADD COLUMN lane INTEGER NOT NULL DEFAULT 0 CHECK (lane IN (0, 1));
UPDATE runs SET due_at = scheduled_at;
-- During a rolling upgrade the nodes of the release before insert runs
-- without a due_at: due at their scheduled time.
CREATE FUNCTION runs_due_at_default() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.due_at := NEW.scheduled_at;
  RETURN NEW;
END
$$;
CREATE TRIGGER runs_due_at_default BEFORE INSERT ON runs FOR EACH ROW
  WHEN (NEW.due_at IS NULL) EXECUTE FUNCTION runs_due_at_default();
CREATE INDEX runs_claim_order ON runs (lane, due_at, id) WHERE state = 'pending' AND released = 1;
-- runs_due_order stays: the release before claims in (scheduled_at, id) order.
