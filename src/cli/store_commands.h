// Operating the ledger's database: `backup` and `migrate-store`
// (docs/deploy.md).
#ifndef CRONLEDGER_CLI_STORE_COMMANDS_H_
#define CRONLEDGER_CLI_STORE_COMMANDS_H_

#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct BackupArgs {
  std::string config_path;  // already resolved
  std::string to;           // --to FILE
};

// `cronledger backup --to FILE`: a consistent copy of the configured SQLite
// ledger, safe while `serve` runs (SQLite's online backup API). Exit 0;
// 1 when FILE cannot be written; 2 on a config error or a PostgreSQL store
// (use pg_dump, docs/deploy.md); 3 when the ledger cannot be opened.
int RunBackup(const BackupArgs& args, std::ostream& out, std::ostream& err);

struct MigrateStoreArgs {
  std::string from;  // sqlite:FILE
  std::string to;    // postgresql://...
};

// `cronledger migrate-store --from sqlite:FILE --to postgresql://...`:
// copies every table of the ledger into an empty PostgreSQL database,
// continues the fencing sequence above the highest token copied, verifies
// the counts, and prints them. Exit 0; 1 when a `serve` node beat in the
// source within the last 30 s (checked before the target is reached: a
// copy taken while a node writes misses what it writes next), the target
// is not empty or a count disagrees (nothing is committed); 2 on usage
// errors; 3 when either database cannot be reached.
int RunMigrateStore(const MigrateStoreArgs& args, const Clock& clock, std::ostream& out,
                    std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_STORE_COMMANDS_H_
