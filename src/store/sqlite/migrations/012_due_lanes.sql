-- Schema 12: when a run is due, and the lane it is claimed in.
--
-- `due_at`: the instant from which a pending run may be claimed. A planned
-- run is due at its scheduled time; a run an operator triggers ahead of its
-- occurrence (trigger --date of the current business date before 09:00)
-- keeps its nominal scheduled_at, which names its occurrence, and is due at
-- once. `lane`: 0 for the schedule's own runs and an operator's trigger,
-- retry or resolve; 1 for runs queued by a backfill, a rerun or an approval.
-- A claim takes every due run of lane 0 before any of lane 1, so a large
-- backfill never delays today's occurrences.
ALTER TABLE runs ADD COLUMN due_at INTEGER;
ALTER TABLE runs ADD COLUMN lane INTEGER NOT NULL DEFAULT 0 CHECK (lane IN (0, 1));
UPDATE runs SET due_at = scheduled_at;
-- A binary before this schema inserts runs without a due_at: they are due
-- at their scheduled time. (This binary always writes it, so the trigger's
-- condition is all it costs.)
CREATE TRIGGER runs_due_at_default AFTER INSERT ON runs FOR EACH ROW WHEN NEW.due_at IS NULL
BEGIN
  UPDATE runs SET due_at = NEW.scheduled_at WHERE id = NEW.id;
END;
-- The claim's walk: due runs of one lane in (due_at, id) order; the rowid
-- is the index's last key.
CREATE INDEX runs_claim_order ON runs (lane, due_at) WHERE state = 'pending' AND released = 1;
-- Kept: a binary before this schema claims in (scheduled_at, id) order.
