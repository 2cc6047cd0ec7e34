// Params and records of nodes, roles and ledger retention.
#ifndef CRONLEDGER_STORE_NODES_H_
#define CRONLEDGER_STORE_NODES_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/records.h"

namespace cronledger::store {

// A `serve` node saying it is alive (the node heartbeat table).
struct NodeBeat {
  std::string node;
  std::string version;
  std::string listen;  // its API address, "" when it serves none
  Instant started_at;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // The process that beats: its host name and process id.
  std::string host = {};
  int64_t pid = 0;
};

struct NodeRecord {
  std::string node;
  std::string version;
  std::string listen;
  Instant started_at;
  Instant last_seen_at;
  int running = 0;  // runs whose lease it holds now
  // The roles it holds or last held (RoleHold), each with the end of its
  // lease: held now when that is not past.
  std::vector<std::pair<std::string, Instant>> roles;
  // When it stopped cleanly (NodeStopped); none while it runs or after a
  // crash.
  std::optional<Instant> stopped_at;
  // The process that beat last ("" and 0 before schema 10).
  std::string host;
  int64_t pid = 0;
};

// A node asking to hold a role that one node at a time holds (alerting).
struct RoleParams {
  std::string role;
  std::string node;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::chrono::milliseconds ttl{30000};  // held until now + ttl unless renewed
};

struct PurgeParams {
  // Runs in a finished end state (succeeded, failed, skipped, cancelled)
  // whose last change is before this instant go, with what belongs to them.
  Instant before;
  int limit = 500;  // runs per call (one transaction)
  // Nodes last seen before this instant are forgotten (status stops
  // listing them), in the call that finishes the runs; none when unset.
  std::optional<Instant> nodes_seen_before;
};
struct PurgeResult {
  int runs = 0;
  int attempts = 0;
  int events = 0;
  int effects = 0;
  int nodes = 0;
};

// A dashboard session or one-time login code (docs/dashboard.md), known by
// the SHA-256 of its secret: kept in the ledger, it outlives a restart of
// serve and holds on every node of the ledger.
struct DashboardGrant {
  enum class Kind { kSession, kLoginCode };
  std::string digest;  // SHA-256 hex of the session id or the code
  Kind kind = Kind::kSession;
  std::string token_name;
  std::string token_digest;  // a session's: SHA-256 hex of its token's secret
  std::string csrf_token;    // a session's
  Instant created_at{};
  Instant expires_at{};
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_NODES_H_
