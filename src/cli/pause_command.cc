#include "cli/pause_command.h"

#include <fmt/format.h>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

namespace cronledger::cli {
int RunPause(const PauseArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const std::string command = args.pause ? "pause" : "resume";
  const auto usage = [&](const std::string& message) {
    err << "cronledger " << command << ": " << message << "\n";
    return kExitUsage;
  };
  if (args.job.has_value() == args.all) {
    return usage("give exactly one of --job JOB or --all");
  }
  if (args.job && args.job->empty()) return usage("--job needs a job name");
  auto acting = OpenLedgerToAct(command, {args.config_path, args.server, args.job}, args.reason,
                                args.by, clock, err, StoreAccess::kCreate);
  if (!acting.ledger) return acting.exit_code;
  if (auto done = acting.ledger->SetPaused({args.job, args.pause, acting.who}); !done.ok()) {
    return Refused(command, done.status(), err);
  }

  out << (args.pause ? "paused " : "resumed ")
      << (args.job ? "job " + *args.job : std::string("everything")) << "\n";
  return kExitOk;
}

}  // namespace cronledger::cli
