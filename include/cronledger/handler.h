// In-process step handlers: the embedding API for jobs with
// executor = "inprocess" (DESIGN.md). A handler is called once per step
// attempt on a worker thread and returns an exit status with the same
// meaning as a subprocess's (0 success, 75 retryable, 64/65/66/77/78
// permanent, anything else retryable until the limits).
#ifndef CRONLEDGER_HANDLER_H_
#define CRONLEDGER_HANDLER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>

namespace cronledger {

// What a handler may know about the attempt it runs for.
struct RunContext {
  std::string job;
  std::string partition;
  std::string business_date;  // YYYY-MM-DD
  std::string period;
  std::string run_key;
  std::chrono::sys_seconds scheduled_at;
  int64_t run_id = 0;
  int attempt = 0;
  int64_t fencing_token = 0;
  std::string step;
  // Requested when the attempt must stop: its lease was lost (fenced off),
  // its timeout passed, or the node is shutting down. A handler that does
  // long work should check it and return early.
  std::stop_token cancel;
};

using StepHandler = std::function<int(const RunContext&)>;

// Handlers by job, and optionally by step. Thread-safe.
class HandlerRegistry {
 public:
  // Registers `handler` for every step of `job` (step empty) or one step.
  void Register(const std::string& job, StepHandler handler, const std::string& step = "");
  // The handler for (job, step): the step's own, else the job's; null if none.
  StepHandler Find(const std::string& job, const std::string& step) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, StepHandler> handlers_;
};

}  // namespace cronledger

#endif  // CRONLEDGER_HANDLER_H_
