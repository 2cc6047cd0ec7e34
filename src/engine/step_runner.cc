#include "engine/step_runner.h"

#include <exception>

#include <fmt/format.h>

#include "exec/subprocess_executor.h"

namespace cronledger::engine {

ledger::EndClass ClassifyStep(const exec::StepOutcome& o, const config::JobConfig& job) {
  using ledger::EndClass;
  switch (o.end) {
    case exec::StepEnd::kExited:
      return ledger::ClassifyExit(o.exit_status, job.retry_exit_codes, job.fail_exit_codes);
    case exec::StepEnd::kTimeout: return EndClass::kTimeout;
    case exec::StepEnd::kSignal: return EndClass::kSignal;
    case exec::StepEnd::kSpawnFailed: return EndClass::kSpawnFailed;
    case exec::StepEnd::kCancelled: return EndClass::kSignal;
  }
  return EndClass::kRetryable;
}

DefaultStepRunner::DefaultStepRunner(const config::Config& config, Clock& clock,
                                     const HandlerRegistry* handlers, AttemptEnv attempt_env)
    : config_(config), clock_(clock), handlers_(handlers), attempt_env_(std::move(attempt_env)) {}

exec::StepOutcome DefaultStepRunner::Run(const exec::StepContext& ctx,
                                         const config::JobConfig& job,
                                         const config::StepConfig& step,
                                         const std::string& log_path, std::stop_token cancel) {
  if (job.executor == config::Executor::kSubprocess) {
    exec::SubprocessSpec spec;
    spec.command = step.command;
    spec.cwd = config_.dir;
    spec.timeout = step.timeout;
    spec.env = job.env;
    spec.env_from_host = job.env_from_host;
    spec.log_path = log_path;
    spec.output_cap = config_.server.output_cap;
    if (attempt_env_) {
      auto extra = attempt_env_(ctx);
      if (!extra.ok()) {
        // Not the command's fault, and likely passing (the store was busy):
        // retryable, as EX_TEMPFAIL is.
        exec::StepOutcome outcome;
        outcome.end = exec::StepEnd::kExited;
        outcome.exit_status = 75;
        outcome.output_tail = "step not started: " + extra.status().message();
        return outcome;
      }
      spec.attempt_env = std::move(*extra);
    }
    return exec::RunSubprocessStep(ctx, spec, clock_, cancel);
  }
  exec::StepOutcome outcome;
  const StepHandler handler = handlers_ ? handlers_->Find(job.name, step.name) : nullptr;
  if (!handler) {
    outcome.end = exec::StepEnd::kSpawnFailed;
    outcome.error = fmt::format("no in-process handler registered for job {} step {}", job.name,
                                step.name);
    return outcome;
  }
  RunContext rc = ctx;
  rc.cancel = cancel;
  try {
    outcome.exit_status = handler(rc);
    outcome.end = cancel.stop_requested() ? exec::StepEnd::kCancelled : exec::StepEnd::kExited;
  } catch (const std::exception& e) {
    // A throwing handler is a failed attempt, retryable like exit 1.
    outcome.exit_status = 1;
    outcome.output_tail = fmt::format("handler threw: {}", e.what());
  }
  return outcome;
}

}  // namespace cronledger::engine
