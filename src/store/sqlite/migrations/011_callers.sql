-- Schema 11: who called, recorded as who it was rather than who it said it
-- was.
--
-- An external worker's claim records the name of the API token that made
-- it, and the worker routes refuse every other token's write to that
-- attempt (403, before the lease's 409): a fencing token is a small integer
-- any worker can guess, the claimant is not. Empty for claims made by a
-- node's own executor and for attempts claimed before this schema (those
-- stay writable by any worker token, as they were).
ALTER TABLE attempts ADD COLUMN claimant TEXT NOT NULL DEFAULT '';
-- An operator action's event names the caller as its actor (the API
-- token's name, locally the OS user); the name it was done for (`--by`,
-- the API's `by`) is recorded beside it. NULL: none given, and every event
-- before this schema.
ALTER TABLE events ADD COLUMN on_behalf_of TEXT;
-- Additive: a binary with schema version 10 neither writes nor reads them.
