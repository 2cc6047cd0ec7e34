#include "cli/run_action_command.h"

#include <fmt/format.h>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

namespace cronledger::cli {
namespace {

int ActOnOneRun(const std::string& command, ops::RunActionKind kind, std::string_view done,
                const RunActionArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  if (args.run_id <= 0) {
    return UsageError(err, command, fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  }
  auto acting = OpenLedgerToAct(command, {args.config_path, args.server, {}}, args.reason, args.by,
                                clock, err);
  if (!acting.ledger) return acting.exit_code;
  const ops::RunAction action{args.run_id, kind, {}, {}, {}, std::move(acting.who)};
  if (auto done = acting.ledger->ActOnRun(action); !done.ok())
    return Refused(command, done.status(), err);
  out << fmt::format("run {} {}\n", args.run_id, done);
  return kExitOk;
}

}  // namespace

int RunRetry(const RunActionArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  return ActOnOneRun("retry", ops::RunActionKind::kRetry, "queued for a new attempt", args, clock,
                     out, err);
}

int RunCancel(const RunActionArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  return ActOnOneRun("cancel", ops::RunActionKind::kCancel, "cancelled", args, clock, out, err);
}

}  // namespace cronledger::cli
