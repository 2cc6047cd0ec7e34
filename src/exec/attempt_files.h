// Files kept with attempts: copies of a step's inputs (keep_inputs) and the
// pruning of per-attempt folders after log_retention.
#ifndef CRONLEDGER_EXEC_ATTEMPT_FILES_H_
#define CRONLEDGER_EXEC_ATTEMPT_FILES_H_

#include <chrono>
#include <string>
#include <vector>

#include "cronledger/clock.h"
#include "exec/executor.h"

namespace cronledger::exec {

// Copies each file of `patterns` (placeholders substituted; relative paths
// against `base_dir`) into `dest_dir`, named by its path with '/' turned
// into '_'. A file that cannot be copied is skipped; returns one line per
// problem, for the log.
std::vector<std::string> KeepInputs(const std::vector<std::string>& patterns,
                                    const StepContext& ctx, const std::string& base_dir,
                                    const std::string& dest_dir);

// Removes the run folders `{log_dir}/{job}/{run_id}` whose newest file is
// older than `retention` at `now`. Returns how many were removed.
int PruneAttemptFolders(const std::string& log_dir, std::chrono::seconds retention,
                        Clock::TimePoint now);

}  // namespace cronledger::exec

#endif  // CRONLEDGER_EXEC_ATTEMPT_FILES_H_
