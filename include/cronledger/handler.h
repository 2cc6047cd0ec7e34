// In-process step handlers: the embedding API for jobs with
// executor = "inprocess" (docs/execution.md). A handler is called once per step
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
#include <string_view>

namespace cronledger {

struct RunContext;

// What an effect function (or its reconcile function) reports, in the terms
// of `cronledger effect run`: exit status 0 means it happened and `output`
// is the result to store; any other status means it did not happen.
// A reconcile function answers 0 (it happened; `output` is the result),
// 1 (it did not) or anything else (still in doubt).
struct EffectResult {
  int exit_status = 0;
  std::string output;
};
using EffectFn = std::function<EffectResult()>;

// RunContext::Effect's answers besides the effect's own exit status, the
// sysexits-style codes of `cronledger effect run` (docs/effects.md).
inline constexpr int kEffectUsage = 64;        // no effect ledger, or a bad key
inline constexpr int kEffectMismatch = 65;     // the key was used with another fingerprint
inline constexpr int kEffectInDoubt = 69;      // in doubt and not reconciled: the run ends unknown
inline constexpr int kEffectUnavailable = 75;  // the ledger could not be reached (retryable)
inline constexpr int kEffectFenced = 76;       // the attempt's lease moved on: stop

// The server side of RunContext::Effect (the engine provides it).
class EffectLedger {
 public:
  virtual ~EffectLedger() = default;
  virtual int Run(const RunContext& ctx, std::string_view key, std::string_view fingerprint,
                  const EffectFn& effect, const EffectFn& reconcile,
                  std::string* output) const = 0;
};

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
  // Set by the dispatcher; Effect() answers kEffectUsage without it.
  const EffectLedger* effects = nullptr;

  // Does `effect` at most once in effect for `key` (scoped to the job), like
  // `cronledger effect run`: the first call records the key `started`
  // durably, runs `effect` and stores its outcome; a later call with the
  // same key and fingerprint (a retry, a rerun) does not run it again and
  // returns 0 with the stored result in `*output`. A key left `started` by
  // an attempt that is over is in doubt: `reconcile` decides (see
  // EffectResult); without it, or if it cannot tell, the answer is
  // kEffectInDoubt and the run ends `unknown`. Returns `effect`'s exit
  // status, 0 on a replay, or one of the kEffect* codes. If `effect` throws,
  // the key stays `started` (it may have happened) and the answer is
  // kEffectInDoubt.
  int Effect(std::string_view key, std::string_view fingerprint, const EffectFn& effect,
             const EffectFn& reconcile = {}, std::string* output = nullptr) const {
    if (effects == nullptr) return kEffectUsage;
    return effects->Run(*this, key, fingerprint, effect, reconcile, output);
  }
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
