#include "cli/store_commands.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "cli/context.h"
#include "ops/json_shapes.h"
#include "ops/ledger_json.h"
#include "cli/exit_codes.h"
#include "store/open_store.h"
#include "store/sql/sql_store.h"
#include "store/sqlite/sqlite_backup.h"

namespace cronledger::cli {
namespace {

bool IsPostgresUrl(const std::string& url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

int ExitFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable:
      return kExitUnavailable;
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitFound;
  }
}

}  // namespace

int RunBackup(const BackupArgs& args, std::ostream& out, std::ostream& err) {
  config::Config config;
  if (int rc = LoadConfigOrReport("backup", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  if (IsPostgresUrl(config.server.store)) {
    err << "cronledger backup: the store is PostgreSQL; back it up with pg_dump (docs/deploy.md, "
           "Backups)\n";
    return kExitUsage;
  }
  const std::string from = config.server.store.substr(std::string("sqlite:").size());
  const std::filesystem::path to_path = std::filesystem::absolute(args.to).lexically_normal();
  if (std::error_code ec; !std::filesystem::is_directory(to_path.parent_path(), ec)) {
    err << "cronledger backup: --to " << args.to << ": no folder " << to_path.parent_path().string()
        << " (create it first)\n";
    return kExitUsage;
  }
  if (std::error_code ec; std::filesystem::is_directory(to_path, ec)) {
    err << "cronledger backup: --to " << args.to
        << " is a folder; name the file to write, e.g. " << (to_path / "cronledger.db").string()
        << "\n";
    return kExitUsage;
  }
  if (!std::filesystem::exists(from)) {
    err << "cronledger backup: no ledger at " << from << "\n";
    return kExitUnavailable;
  }
  const std::string to = to_path.string();
  if (to == std::filesystem::absolute(from).lexically_normal().string()) {
    err << "cronledger backup: --to names the ledger itself\n";
    return kExitUsage;
  }
  auto report = store::BackupSqlite(from, to);
  if (!report.ok()) {
    err << "cronledger backup: " << report.status().message() << "\n";
    return report.status().code() == StatusCode::kUnavailable ? kExitUnavailable : kExitFound;
  }
  out << fmt::format("backed up {} to {}: {} bytes, {} run(s), {} event(s)\n", from, to,
                     report->bytes, report->runs, report->events);
  return kExitOk;
}

int RunMigrateStore(const MigrateStoreArgs& args, const Clock& clock, std::ostream& out,
                    std::ostream& err) {
  if (!args.from.starts_with("sqlite:")) {
    err << "cronledger migrate-store: --from must be a SQLite ledger, sqlite:FILE\n";
    return kExitUsage;
  }
  if (!IsPostgresUrl(args.to)) {
    err << "cronledger migrate-store: --to must be a PostgreSQL URL, postgresql://USER@HOST/DB\n";
    return kExitUsage;
  }
  if (const std::string problem = config::PostgresUrlProblem(args.to); !problem.empty()) {
    err << "cronledger migrate-store: --to: " << problem << "\n";
    return kExitUsage;
  }
  const std::string file = args.from.substr(std::string("sqlite:").size());
  if (!std::filesystem::exists(file)) {
    err << "cronledger migrate-store: no ledger at " << file << "\n";
    return kExitUnavailable;
  }
  auto from = store::OpenStore({.url = args.from}, /*create=*/false);
  if (!from.ok()) {
    err << "cronledger migrate-store: " << from.status().message() << "\n";
    return kExitUnavailable;
  }
  {
    auto nodes = (*from)->NodeList();
    if (!nodes.ok()) {
      err << "cronledger migrate-store: " << nodes.status().message() << "\n";
      return ExitFor(nodes.status());
    }
    const store::Instant now = store::ToInstant(clock.Now());
    for (const auto& n : *nodes) {
      if (!ops::NodeAlive(n, now)) continue;
      err << fmt::format(
          "cronledger migrate-store: node {} is still serving this ledger (it beat at {} and did "
          "not stop cleanly): stop every `cronledger serve` on it first (one killed: wait {} s); "
          "a copy taken while a node writes misses what it writes next\n",
          n.node, ops::FormatInstant(n.last_seen_at), ops::kNodeAliveWithin.count());
      return kExitFound;
    }
  }
  auto to = store::OpenStore({.url = args.to});
  if (!to.ok()) {
    err << "cronledger migrate-store: " << to.status().message() << "\n";
    return kExitUnavailable;
  }
  auto* src = dynamic_cast<store::SqlStore*>(from->get());
  auto* dst = dynamic_cast<store::SqlStore*>(to->get());
  auto report = store::SqlStore::CopyLedger(*src, *dst);
  if (!report.ok()) {
    err << "cronledger migrate-store: " << report.status().message() << "\n";
    return ExitFor(report.status());
  }
  out << fmt::format("copied {} to {}:\n", file, store::RedactStoreUrl(args.to));
  for (const auto& [table, rows] : report->tables) {
    out << fmt::format("  {:<14} {:>10} row(s)\n", table, rows);
  }
  out << fmt::format("fencing tokens continue after {}; counts verified\n",
                     report->last_token);
  return kExitOk;
}

}  // namespace cronledger::cli
