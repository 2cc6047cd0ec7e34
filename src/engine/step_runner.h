// Runs one step of a claimed run, by the job's executor: a subprocess, or a
// registered in-process handler.
#ifndef CRONLEDGER_ENGINE_STEP_RUNNER_H_
#define CRONLEDGER_ENGINE_STEP_RUNNER_H_

#include <stop_token>
#include <string>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "exec/executor.h"

namespace cronledger::engine {

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
  DefaultStepRunner(const config::Config& config, Clock& clock, const HandlerRegistry* handlers);
  exec::StepOutcome Run(const exec::StepContext& ctx, const config::JobConfig& job,
                        const config::StepConfig& step, const std::string& log_path,
                        std::stop_token cancel) override;

 private:
  const config::Config& config_;
  Clock& clock_;
  const HandlerRegistry* handlers_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_STEP_RUNNER_H_
