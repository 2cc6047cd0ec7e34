// Runs subprocess steps: argv only, placeholders per element, the clean
// environment of docs/execution.md (The environment of a step), its own
// process group, a timeout with SIGTERM then SIGKILL, output to a
// per-attempt log.
#ifndef CRONLEDGER_EXEC_SUBPROCESS_EXECUTOR_H_
#define CRONLEDGER_EXEC_SUBPROCESS_EXECUTOR_H_

#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "cronledger/clock.h"
#include "exec/executor.h"

namespace cronledger::exec {

// Substitutes {partition}, {business_date}, {period} and {run_key} inside
// each element of `argv`.
std::vector<std::string> SubstitutePlaceholders(const std::vector<std::string>& argv,
                                                const StepContext& ctx);

// The CRONLEDGER_* variables of `ctx`'s run key and attempt (JOB, PARTITION,
// BUSINESS_DATE, PERIOD, SCHEDULED_AT, RUN_KEY, RUN_ID, ATTEMPT, STEP,
// FENCING_TOKEN), in that order: what a step gets, and an external worker
// with its claim.
std::vector<std::pair<std::string, std::string>> RunKeyEnvironment(const StepContext& ctx);

// The complete environment of a step: PATH, HOME, LANG, TZ=UTC, the job's
// env, the env_from_host variables that are set, and the CRONLEDGER_*
// variables of `ctx`.
std::vector<std::string> StepEnvironment(const SubprocessSpec& spec, const StepContext& ctx);

// Runs the step to its end. A stop request on `cancel` ends it like a
// timeout (SIGTERM, grace, SIGKILL) and reports kCancelled. The child gets
// PR_SET_PDEATHSIG so it does not outlive a killed supervisor.
// Thread-safe: any number of steps may run at once.
StepOutcome RunSubprocessStep(const StepContext& ctx, const SubprocessSpec& spec, Clock& clock,
                              std::stop_token cancel);

}  // namespace cronledger::exec

#endif  // CRONLEDGER_EXEC_SUBPROCESS_EXECUTOR_H_
