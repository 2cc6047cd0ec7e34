// SqlStore, operations half: the node heartbeat table and ledger retention.
#include <fmt/format.h>

#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers

using sql::Transaction;

// Runs one statement binding `id` to every parameter; returns the rows changed.
Result<int> RunForId(sql::Db& db, std::string_view sql, int64_t id) {
  ASSIGN_OR_RETURN(s, db.Prepare(sql));
  s.Bind(1, id);
  RETURN_IF_ERROR(s.Run());
  return db.Changes();
}

}  // namespace

Status SqlStore::NodeHeartbeat(const NodeBeat& b) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(at, StatementNow(b.now));
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "INSERT INTO nodes (name, version, listen, started_at, last_seen_at, host, pid) "
      "VALUES (?1, ?2, ?3, ?4, {}, ?6, ?7) ON CONFLICT (name) DO UPDATE SET "
      "version = excluded.version, listen = excluded.listen, "
      "started_at = excluded.started_at, last_seen_at = excluded.last_seen_at, "
      "stopped_at = NULL, host = excluded.host, pid = excluded.pid",
      NowSql(5))));
  s.Bind(1, b.node).Bind(2, b.version).Bind(3, b.listen).Bind(4, Ms(b.started_at))
      .BindOptional(5, at).Bind(6, b.host).Bind(7, b.pid);
  return s.Run();
}

Status SqlStore::NodeStopped(const NodeBeat& b) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(at, StatementNow(b.now));
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "UPDATE nodes SET last_seen_at = {0}, stopped_at = {0} WHERE name = ?1 AND started_at = ?2",
      NowSql(3))));
  s.Bind(1, b.node).Bind(2, Ms(b.started_at)).BindOptional(3, at);
  return s.Run();
}

Result<std::vector<NodeRecord>> SqlStore::NodeList() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "SELECT n.name, n.version, n.listen, n.started_at, n.last_seen_at, "
      "(SELECT count(*) FROM runs r WHERE r.state = 'running' AND r.lease_node = n.name), "
      "n.stopped_at, n.host, n.pid FROM nodes n ORDER BY n.name"));
  std::vector<NodeRecord> nodes;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    NodeRecord n;
    n.node = s.Text(0);
    n.version = s.Text(1);
    n.listen = s.Text(2);
    n.started_at = FromMs(s.Int(3));
    n.last_seen_at = FromMs(s.Int(4));
    n.running = static_cast<int>(s.Int(5));
    if (!s.IsNull(6)) n.stopped_at = FromMs(s.Int(6));
    n.host = s.Text(7);
    n.pid = s.Int(8);
    nodes.push_back(std::move(n));
  }));
  ASSIGN_OR_RETURN(r, db_->Prepare("SELECT node, name, expires_at FROM roles ORDER BY name"));
  RETURN_IF_ERROR(ForEachRow(r, [&] {
    const std::string_view holder = r.TextView(0);
    for (NodeRecord& n : nodes) {
      if (n.node == holder) n.roles.emplace_back(r.Text(1), FromMs(r.Int(2)));
    }
  }));
  return nodes;
}

Result<bool> SqlStore::RoleHold(const RoleParams& p) {
  if (p.role.empty() || p.node.empty()) {
    return Status(StatusCode::kInvalidArgument, "a role and a node are required");
  }
  std::lock_guard lock(mu_);
  // The conflict's WHERE is judged on the row as it is when this statement
  // gets it (PostgreSQL waits for a concurrent holder's write first): a
  // live lease of another node leaves the row as it is, and no row changes.
  ASSIGN_OR_RETURN(at, StatementNow(p.now));
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "INSERT INTO roles (name, node, expires_at) VALUES (?1, ?2, {0} + ?3) "
      "ON CONFLICT (name) DO UPDATE SET node = excluded.node, expires_at = excluded.expires_at "
      "WHERE roles.node = excluded.node OR roles.expires_at < {0}",
      NowSql(4))));
  s.Bind(1, p.role).Bind(2, p.node).Bind(3, int64_t{p.ttl.count()}).BindOptional(4, at);
  RETURN_IF_ERROR(s.Run());
  return db_->Changes() == 1;
}

Status SqlStore::RoleRelease(const std::string& role, const std::string& node) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare("DELETE FROM roles WHERE name = ?1 AND node = ?2"));
  s.Bind(1, role).Bind(2, node);
  return s.Run();
}

Result<PurgeResult> SqlStore::RunPurge(const PurgeParams& p) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  std::vector<int64_t> ids;
  {
    // The literal condition of the partial index runs_updated (migration 009).
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT id FROM runs WHERE (state = 'succeeded' OR state = 'failed' OR "
        "state = 'skipped' OR state = 'cancelled') "
        "AND updated_at < ?1 AND NOT EXISTS (SELECT 1 FROM checkpoints c "
        "WHERE c.scope = 'partition' AND c.writer_run_id = runs.id) "
        "ORDER BY updated_at, id LIMIT ?2"));
    s.Bind(1, Ms(p.before)).Bind(2, int64_t{p.limit});
    RETURN_IF_ERROR(ForEachRow(s, [&] { ids.push_back(s.Int(0)); }));
  }
  PurgeResult result;
  for (const int64_t id : ids) {
    // Children first: the ledger's foreign keys point at runs and effects.
    ASSIGN_OR_RETURN(attempts, RunForId(*db_, "DELETE FROM attempts WHERE run_id = ?1", id));
    result.attempts += attempts;
    RETURN_IF_ERROR(RunForId(*db_, "DELETE FROM run_steps WHERE run_id = ?1", id).status());
    RETURN_IF_ERROR(RunForId(*db_,
                             "DELETE FROM effect_doubts WHERE run_id = ?1 OR effect_id IN "
                             "(SELECT id FROM effects WHERE run_id = ?1)",
                             id)
                        .status());
    RETURN_IF_ERROR(
        RunForId(*db_, "UPDATE effects SET doubt_run_id = NULL, doubt_token = NULL "
                       "WHERE doubt_run_id = ?1 AND run_id <> ?1",
                 id)
            .status());
    ASSIGN_OR_RETURN(effects, RunForId(*db_, "DELETE FROM effects WHERE run_id = ?1", id));
    result.effects += effects;
    RETURN_IF_ERROR(
        RunForId(*db_, "DELETE FROM checkpoints WHERE scope = 'run' AND run_id = ?1", id)
            .status());
    RETURN_IF_ERROR(RunForId(*db_, "DELETE FROM event_runs WHERE run_id = ?1", id).status());
    ASSIGN_OR_RETURN(events, RunForId(*db_, "DELETE FROM events WHERE run_id = ?1", id));
    result.events += events;
    ASSIGN_OR_RETURN(runs, RunForId(*db_, "DELETE FROM runs WHERE id = ?1", id));
    result.runs += runs;
  }
  if (static_cast<int>(ids.size()) < p.limit) {
    // Actions over many runs and job-level events, once nothing refers to them.
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "DELETE FROM events WHERE run_id IS NULL AND at < ?1 "
        "AND NOT EXISTS (SELECT 1 FROM event_runs er WHERE er.event_id = events.id)"));
    s.Bind(1, Ms(p.before));
    RETURN_IF_ERROR(s.Run());
    result.events += db_->Changes();
    if (p.nodes_seen_before) {
      ASSIGN_OR_RETURN(n, db_->Prepare("DELETE FROM nodes WHERE last_seen_at < ?1"));
      n.Bind(1, Ms(*p.nodes_seen_before));
      RETURN_IF_ERROR(n.Run());
      result.nodes += db_->Changes();
    }
  }
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

}  // namespace cronledger::store
