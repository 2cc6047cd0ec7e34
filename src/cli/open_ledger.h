// The one place a ledger command chooses where its ledger is: with
// --server (or $CRONLEDGER_SERVER) a serve's HTTP API (RemoteLedger), else
// the configured store (ops::LocalLedger). Commands then talk to the
// ops::Ledger they get and never ask which it is.
#ifndef CRONLEDGER_CLI_OPEN_LEDGER_H_
#define CRONLEDGER_CLI_OPEN_LEDGER_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "cli/context.h"
#include "cronledger/clock.h"
#include "ops/ledger.h"

namespace cronledger::cli {

// Where a ledger command's ledger is (the flags every one of them takes).
struct LedgerTarget {
  std::string config_path;
  std::string server;  // "" for the configured store
  // A job the command needs configured (its schedule): without a server,
  // checked against the config before the store is opened, so the usage
  // error comes first (with one, the server checks it).
  std::optional<std::string> configured_job;
};

// Opens it. Problems (an unusable config, an unreachable store, a bad
// server URL, no token) are printed as `command`; kExitOk, or the exit
// code. `access` says whether a local store may be created.
int OpenLedger(const std::string& command, const LedgerTarget& target, Clock& clock,
               std::unique_ptr<ops::Ledger>* out, std::ostream& err,
               StoreAccess access = StoreAccess::kExisting);

// What a command that acts on the ledger starts with, after its own usage
// checks: the actor it records, from --reason (required, not blank) and --by
// (default DefaultActor(), not blank), each problem a usage error printed
// as `command`; then the ledger, opened as OpenLedger does.
struct ActingLedger {
  std::unique_ptr<ops::Ledger> ledger;  // null: not opened, and `exit_code` says why
  ops::Actor who;
  int exit_code = 0;
};
ActingLedger OpenLedgerToAct(const std::string& command, const LedgerTarget& target,
                             const std::optional<std::string>& reason,
                             const std::optional<std::string>& by, Clock& clock, std::ostream& err,
                             StoreAccess access = StoreAccess::kExisting);

// The --reason or --by problem of OpenLedgerToAct, for a command that opens
// its ledger later; "" when there is none.
std::string ActorProblem(const std::optional<std::string>& reason,
                         const std::optional<std::string>& by);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_OPEN_LEDGER_H_
