// Runs one step of a claimed run, by the job's executor: a subprocess, or a
// registered in-process handler.
#ifndef CRONLEDGER_ENGINE_STEP_RUNNER_H_
#define CRONLEDGER_ENGINE_STEP_RUNNER_H_

#include <functional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "cronledger/status.h"
#include "exec/executor.h"
#include "ledger/attempt_policy.h"

namespace cronledger::engine {

// The end class of a step's outcome (docs/execution.md, Outcomes): an exit
// status by its class (ledger::ClassifyExit with the job's
// retry_exit_codes / fail_exit_codes), a timeout, signal or cancel as an
// uncertain end, a failed start as spawn_failed. The one classification of
// subprocess steps, in-process handlers and external workers' step results.
ledger::EndClass ClassifyStep(const exec::StepOutcome& outcome, const config::JobConfig& job);

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Runs `step` of `job` for `ctx` to its end; `cancel` ends it early.
  // `log_path` receives the step's output (subprocesses).
  virtual exec::StepOutcome Run(const exec::StepContext& ctx, const config::JobConfig& job,
                                const config::StepConfig& step, const std::string& log_path,
                                std::stop_token cancel) = 0;
};

// Subprocess jobs through exec::RunSubprocessStep (cwd: the config's folder;
// the server's output_cap), in-process jobs through `handlers`.
class DefaultStepRunner final : public StepRunner {
 public:
  // Variables a subprocess step gets besides the CRONLEDGER_ ones of the
  // run key and attempt: the API's address, the attempt's credential and
  // its watermarks (serve provides them). An error fails the step's start.
  using AttemptEnv = std::function<Result<std::vector<std::pair<std::string, std::string>>>(
      const exec::StepContext&)>;

  DefaultStepRunner(const config::Config& config, Clock& clock, const HandlerRegistry* handlers,
                    AttemptEnv attempt_env = {});
  exec::StepOutcome Run(const exec::StepContext& ctx, const config::JobConfig& job,
                        const config::StepConfig& step, const std::string& log_path,
                        std::stop_token cancel) override;

 private:
  const config::Config& config_;
  Clock& clock_;
  const HandlerRegistry* handlers_;
  AttemptEnv attempt_env_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_STEP_RUNNER_H_
