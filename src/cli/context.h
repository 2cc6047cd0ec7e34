// What every ledger command does first: load the configuration and open the
// store, mapping failures to the exit codes of docs/cli.md.
#ifndef CRONLEDGER_CLI_CONTEXT_H_
#define CRONLEDGER_CLI_CONTEXT_H_

#include <memory>
#include <ostream>
#include <string>

#include "config/config.h"
#include "store/store.h"

namespace cronledger::cli {

// Loads `path`. On problems prints them (one per line, prefixed with
// "cronledger COMMAND: ") to `err` and returns kExitUsage; else kExitOk.
int LoadConfigOrReport(const std::string& command, const std::string& path,
                       config::Config* out, std::ostream& err);

// Prints "cronledger COMMAND: MESSAGE" to `err`; returns kExitUsage.
int UsageError(std::ostream& err, const std::string& command, const std::string& message);

// Whether a command may create the ledger when it does not exist yet, and
// whether it writes at all: a read-only command (kRead) never writes, not
// even a schema into an empty file or a migration into an older one.
enum class StoreAccess { kCreate, kExisting, kRead };

// Opens the configured store. kExitUnavailable when it cannot be reached,
// does not exist (kExisting) or needs a newer cronledger; kExitUsage for an
// unsupported URL.
int OpenStoreOrReport(const std::string& command, const config::Config& config,
                      std::unique_ptr<store::Store>* out, std::ostream& err,
                      StoreAccess access = StoreAccess::kCreate);

// What a command about one job needs.
struct JobCommand {
  config::Config config;
  const config::JobConfig* job = nullptr;  // in config.jobs
  std::unique_ptr<store::Store> store;
};

// Loads the config, finds `job` (kExitUsage naming it and the file when it
// is not there) and opens the existing store, reporting as `command`.
int OpenJobCommand(const std::string& command, const std::string& config_path,
                   const std::string& job, JobCommand* out, std::ostream& err);

// The name operator actions record by default: the OS user.
std::string DefaultActor();

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_CONTEXT_H_
