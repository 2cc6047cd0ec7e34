#ifndef CRONLEDGER_CLI_RESOLVE_COMMAND_H_
#define CRONLEDGER_CLI_RESOLVE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct ResolveArgs {
  std::string config_path;  // already resolved
  int64_t run_id = 0;
  std::optional<std::string> effect;  // --effect KEY: settle that effect in doubt
  std::optional<std::string> as;      // required: committed|failed with --effect, else
                                      // succeeded|failed|retry
  std::optional<std::string> reason;  // required, not blank
  std::optional<std::string> by;      // default: DefaultActor()
  std::string server;                 // --server URL: "" works on the store
  bool json = false;                  // print the resulting run (RunJson)
};

// `cronledger resolve RUN_ID --effect KEY --as committed|failed` settles an
// effect in doubt of an `unknown` run by the operator's word (the run goes
// back to pending once none of its effects is in doubt);
// `cronledger resolve RUN_ID --as succeeded|failed|retry` settles an
// `unknown` run with no effect in doubt. Recorded as a `resolve` event with
// actor and reason. Exit 0 (also when other effects of the run are still in
// doubt: the named one was settled, and the rest are listed); 1 when the run
// is in another state, an effect is not in doubt or still in doubt, or the
// run or effect does not exist (with the reason); 2 usage or config error;
// 3 store unavailable. With `server`, the same through its
// POST /v1/runs/{id}/resolve.
int RunResolve(const ResolveArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_RESOLVE_COMMAND_H_
