// Operator recovery of gaps (docs/gaps.md): `cronledger backfill`, which
// shows its impact before it acts, and `cronledger approve`. With `server`
// (--server URL) each goes through that serve's operator action instead
// (docs/api.md), printing and exiting alike.
#ifndef CRONLEDGER_CLI_RECOVERY_COMMANDS_H_
#define CRONLEDGER_CLI_RECOVERY_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct BackfillArgs {
  std::string config_path;  // already resolved
  std::string job;
  std::string from;  // business dates, inclusive
  std::string to;
  std::vector<std::string> partitions;  // empty: all
  bool include_waived = false;
  std::optional<std::string> reason;  // required
  std::optional<std::string> by;
  bool yes = false;
  std::optional<std::string> preview_digest;
  std::string server;  // --server URL: "" works on the store
  bool json = false;
};

// Prints the impact (the preview of docs/gaps.md: counts, committed effects,
// the run keys it would queue, a digest); with --yes queues them (never-planned
// and misfired keys; skipped ones with --include-waived) as one `backfill`
// event, refusing with exit 1 and the new preview when the ledger no longer
// matches --preview-digest, or changes under it.
int RunBackfill(const BackfillArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

struct RerunArgs {
  std::string config_path;
  std::string job;
  std::string date;                     // the business date
  std::vector<std::string> partitions;  // empty: all
  std::string only = "all";             // failed, missing, unknown, all
  bool include_waived = false;          // also skipped and cancelled keys (with --only all)
  bool force = false;                   // succeeded runs too; every run from its first step
  std::optional<std::string> reason;
  std::optional<std::string> by;
  bool yes = false;
  std::optional<std::string> preview_digest;
  std::string server;  // --server URL: "" works on the store
  bool json = false;
};

// As backfill, for one business date: failed, unknown and missing keys back
// to pending (same run key, new attempt) as one `rerun` event; succeeded
// ones only with --force, which restarts every queued run at its first step
// (committed effects are replayed, never sent again). docs/gaps.md.
int RunRerun(const RerunArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

struct ApproveArgs {
  std::string config_path;
  std::string job;
  std::optional<std::string> from;
  std::optional<std::string> to;
  std::optional<int64_t> run;
  std::optional<std::string> reason;
  std::optional<std::string> by;
  std::string server;
};

// awaiting_approval → pending for one run or the job's runs of a date range.
// Exit 0; 1 when nothing was awaiting approval or the run is in another
// state; 2 usage; 3 store unavailable.
int RunApprove(const ApproveArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

struct TriggerArgs {
  std::string config_path;
  std::string job;
  std::vector<std::string> partitions;  // empty: all active
  std::optional<std::string> reason;
  std::optional<std::string> by;
  std::string server;
  std::optional<std::string> date;    // a business date to run, or
  std::optional<std::string> period;  // a period; neither: the latest due
};

// Run now: queues the run keys of the job's latest due occurrence. When one
// of them exists already it says so, exits 1 and changes nothing (a rerun
// repeats work, not a trigger); exit 1 "nothing due yet" before the first.
int RunTrigger(const TriggerArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_RECOVERY_COMMANDS_H_
