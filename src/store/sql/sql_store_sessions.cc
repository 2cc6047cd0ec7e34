// SqlStore, dashboard sessions and one-time login codes (table
// dashboard_grants): kept in the ledger so that a restart of serve logs
// nobody out and a session made on one node holds on the others.
#include <fmt/format.h>

#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers

std::string_view KindName(DashboardGrant::Kind k) {
  return k == DashboardGrant::Kind::kSession ? "session" : "login_code";
}

constexpr std::string_view kColumns =
    "digest, kind, token_name, token_digest, csrf_token, created_at, expires_at";

DashboardGrant GrantOf(const sql::Stmt& s) {
  DashboardGrant g;
  g.digest = s.Text(0);
  g.kind = s.TextView(1) == "session" ? DashboardGrant::Kind::kSession
                                      : DashboardGrant::Kind::kLoginCode;
  g.token_name = s.Text(2);
  g.token_digest = s.Text(3);
  g.csrf_token = s.Text(4);
  g.created_at = FromMs(s.Int(5));
  g.expires_at = FromMs(s.Int(6));
  return g;
}

}  // namespace

Status SqlStore::GrantPut(const DashboardGrant& g, Instant now, std::size_t max_sessions) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  {
    ASSIGN_OR_RETURN(s, db_->Prepare("DELETE FROM dashboard_grants WHERE expires_at <= ?1"));
    s.Bind(1, Ms(now));
    RETURN_IF_ERROR(s.Run());
  }
  if (g.kind == DashboardGrant::Kind::kSession) {
    // Room for this one: the newest max_sessions - 1 stay.
    ASSIGN_OR_RETURN(
        s,
        db_->Prepare(
            "DELETE FROM dashboard_grants WHERE kind = 'session' AND digest NOT IN (SELECT digest "
            "FROM dashboard_grants WHERE kind = 'session' ORDER BY expires_at DESC, digest LIMIT "
            "?1)"));
    s.Bind(1, static_cast<int64_t>(max_sessions > 0 ? max_sessions - 1 : 0));
    RETURN_IF_ERROR(s.Run());
  }
  {
    ASSIGN_OR_RETURN(
        s, db_->Prepare(fmt::format(
               "INSERT INTO dashboard_grants ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", kColumns)));
    s.Bind(1, g.digest)
        .Bind(2, std::string(KindName(g.kind)))
        .Bind(3, g.token_name)
        .Bind(4, g.token_digest)
        .Bind(5, g.csrf_token)
        .Bind(6, Ms(g.created_at))
        .Bind(7, Ms(g.expires_at));
    RETURN_IF_ERROR(s.Run());
  }
  return tx.Commit();
}

Result<std::optional<DashboardGrant>> SqlStore::GrantGet(std::string_view digest, Instant now) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(
      s, db_->Prepare(fmt::format(
             "SELECT {} FROM dashboard_grants WHERE digest = ?1 AND expires_at > ?2", kColumns)));
  s.Bind(1, std::string(digest)).Bind(2, Ms(now));
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<DashboardGrant>();
  return std::optional<DashboardGrant>(GrantOf(s));
}

Result<std::optional<DashboardGrant>> SqlStore::GrantTake(std::string_view digest, Instant now) {
  std::lock_guard lock(mu_);
  // One statement: of two nodes spending the same code, one deletes it.
  ASSIGN_OR_RETURN(
      s, db_->Prepare(fmt::format(
             "DELETE FROM dashboard_grants WHERE digest = ?1 AND kind = 'login_code' RETURNING {}",
             kColumns)));
  s.Bind(1, std::string(digest));
  std::optional<DashboardGrant> taken;
  RETURN_IF_ERROR(ForEachRow(s, [&] { taken = GrantOf(s); }));
  if (taken && taken->expires_at <= now) taken.reset();
  return taken;
}

Status SqlStore::GrantDelete(std::string_view digest) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare("DELETE FROM dashboard_grants WHERE digest = ?1"));
  s.Bind(1, std::string(digest));
  return s.Run();
}

}  // namespace cronledger::store
