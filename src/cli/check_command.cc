#include "cli/check_command.h"

#include "cli/exit_codes.h"

namespace cronledger::cli {

int RunCheck(const CheckArgs&, std::ostream&, std::ostream& err) {
  err << "cronledger check: not implemented yet\n";
  return kExitUsage;
}

}  // namespace cronledger::cli
