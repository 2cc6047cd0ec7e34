#include "cli/pause_command.h"

#include <fmt/format.h>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

namespace cronledger::cli {
namespace {

bool IsBlank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

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
  if (!args.reason || IsBlank(*args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  std::string actor = args.by.value_or(DefaultActor());
  if (IsBlank(actor)) return usage("--by needs a name");

  const auto failed = [&](const Status& s) {
    err << "cronledger " << command << ": " << s.message() << "\n";
    return ExitCodeFor(s);
  };

  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger(command, {args.config_path, args.server, args.job}, clock, &ledger, err,
                          StoreAccess::kCreate);
      rc != kExitOk) {
    return rc;
  }
  if (auto done = ledger->SetPaused({args.job, args.pause, {actor, *args.reason}}); !done.ok()) {
    return failed(done.status());
  }

  out << (args.pause ? "paused " : "resumed ")
      << (args.job ? "job " + *args.job : std::string("everything")) << "\n";
  return kExitOk;
}

}  // namespace cronledger::cli
