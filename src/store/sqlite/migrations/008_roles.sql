-- Schema 8: roles that one node at a time holds, for work that must not be
-- done once per node (alerting: one page, not one per node). A role is a
-- lease: its holder renews it on every pass, and another node takes it once
-- `expires_at` has passed. Additive: a binary with schema version 7 does not
-- know roles and alerts from every node, as it did.
CREATE TABLE roles (
  name TEXT PRIMARY KEY,
  node TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
