#include "cli/retry_command.h"

#include <fmt/format.h>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

namespace cronledger::cli {

int RunRetry(const RetryArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger retry: " << message << "\n";
    return kExitUsage;
  };
  if (args.run_id <= 0) return usage(fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  if (!args.reason || args.reason->find_first_not_of(" \t\r\n") == std::string::npos) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("retry", {args.config_path, args.server, {}}, clock, &ledger, err);
      rc != kExitOk) {
    return rc;
  }
  ops::RunAction action;
  action.run_id = args.run_id;
  action.kind = ops::RunActionKind::kRetry;
  action.who = {actor, *args.reason};
  const Status s = ledger->ActOnRun(action).status();
  if (!s.ok()) {
    err << "cronledger retry: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  out << fmt::format("run {} queued for a new attempt\n", args.run_id);
  return kExitOk;
}

}  // namespace cronledger::cli
