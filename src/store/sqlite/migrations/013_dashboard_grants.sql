-- Dashboard sessions and one-time login codes, so that they outlive a
-- restart of serve and hold on every node of the ledger. A row is known by
-- the SHA-256 of its secret (the cookie's session id, the link's code),
-- never the secret itself. A session is bound to the token that logged in
-- (its name and the SHA-256 of its secret: a token rotated or removed ends
-- its sessions); a login code names the token it logs in as.
CREATE TABLE dashboard_grants (
  digest TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('session', 'login_code')),
  token_name TEXT NOT NULL,
  token_digest TEXT NOT NULL DEFAULT '',
  csrf_token TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX dashboard_grants_expiry ON dashboard_grants (kind, expires_at);
