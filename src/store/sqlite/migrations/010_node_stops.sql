-- Schema 10: a node that stops cleanly says so (`stopped_at`; NULL while it
-- runs, cleared by its next beat). status then shows it stopped at once,
-- and a new serve with its name starts without waiting to see whether
-- another process still beats under that name. Additive: a binary with
-- schema version 9 neither writes nor reads it.
ALTER TABLE nodes ADD COLUMN stopped_at INTEGER;
