-- PostgreSQL's spelling of sqlite/migrations/007_claim_order.sql.

-- A claim takes due runs oldest first, `ORDER BY scheduled_at, id`. An index
-- on (scheduled_at) alone (SQLite's carries the rowid, PostgreSQL's does
-- not) made every claim read and sort all due runs: 1-10 ms with thousands
-- due, inside the write lock. With the id as the last key the claim reads
-- its batch in order and stops. Additive for the binaries before it: the
-- index replaced serves the same queries.
CREATE INDEX runs_due_order ON runs (scheduled_at, id) WHERE state = 'pending' AND released = 1;
DROP INDEX runs_due;
