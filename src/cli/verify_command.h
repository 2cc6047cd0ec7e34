#ifndef CRONLEDGER_CLI_VERIFY_COMMAND_H_
#define CRONLEDGER_CLI_VERIFY_COMMAND_H_

#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct VerifyArgs {
  std::string config_path;  // already resolved
  std::string job;
  std::string date;  // business date, YYYY-MM-DD
  std::string server;  // --server URL: "" works on the store
  bool json = false;
};

// `cronledger verify`: the proof that a business date of a job is complete —
// every expected run key succeeded through its last step or is waived.
// Exit 0 complete, 1 not (with what is missing and why), 2 usage or config
// error, 3 store unavailable. With `server`, the same through its
// GET /v1/verify.
int RunVerify(const VerifyArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_VERIFY_COMMAND_H_
