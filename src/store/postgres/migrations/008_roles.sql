-- PostgreSQL's spelling of sqlite/migrations/008_roles.sql.

-- Roles that one node at a time holds (alerting), each a lease renewed by
-- its holder and taken over once it has expired. Additive: a binary with
-- schema version 7 alerts from every node, as it did.
CREATE TABLE roles (
  name TEXT COLLATE "C" PRIMARY KEY,
  node TEXT COLLATE "C" NOT NULL,
  expires_at BIGINT NOT NULL
);
