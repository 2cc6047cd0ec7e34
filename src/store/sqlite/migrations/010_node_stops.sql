-- Schema 10: what tells a node's processes apart. A node that stops
-- cleanly says so (`stopped_at`; NULL while it runs, cleared by its next
-- beat), and each beat records the host and process id that sent it. A
-- serve starting under a node's name then knows without waiting whether
-- the last process under it is gone: it stopped cleanly, or it ran on this
-- host and its process no longer exists. Additive: a binary with schema
-- version 9 neither writes nor reads them.
ALTER TABLE nodes ADD COLUMN stopped_at INTEGER;
ALTER TABLE nodes ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
