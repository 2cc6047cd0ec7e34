// One attempt of a run, from its claim to its end: the one lifecycle the
// dispatcher, the external-worker API and the reaper all follow
// (docs/execution.md; docs/architecture.md, Run states).
//
// An Attempt knows who it is (run, attempt number, fencing token, the node
// that writes for it, its retry budget), which of its job's steps are done,
// and turns what happens into the writes the store applies: a step's start
// or result (StepParams) and the attempt's end (FinishParams) with its end
// class and the run's decision (ledger::DecideAfterAttempt, backoff and
// jitter). It writes nothing itself and reads no clock: every `now` and
// every jitter sample comes from the caller, so it is tested without a
// store (tests/engine/attempt_test.cc).
//
// Steps are addressed by their index in the job's steps; their states are
// ledger::StepStatus. The ledger's step rows are matched to the job's steps
// by name once, when the attempt is built.
#ifndef CRONLEDGER_ENGINE_ATTEMPT_H_
#define CRONLEDGER_ENGINE_ATTEMPT_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "cronledger/handler.h"
#include "exec/executor.h"
#include "ledger/attempt_policy.h"
#include "ledger/names.h"
#include "store/store.h"

namespace cronledger::engine {

// How one step ended, in the ledger's terms.
struct EndOfStep {
  ledger::EndClass end = ledger::EndClass::kSucceeded;
  std::optional<int> exit_status;  // when the step exited
  std::string output_tail;

  // A step run here (subprocess or in-process handler): its class by
  // ClassifyStep, its exit status when it exited, its output's tail or,
  // without output, why it failed to start.
  static EndOfStep Of(const exec::StepOutcome& outcome, const config::JobConfig& job);
};

// A uniform sample in [0, 1) for the random part of a retry's backoff;
// called only when an attempt's end is decided.
using JitterSample = std::function<double()>;

class Attempt {
 public:
  // What a step's end makes of the attempt.
  struct AfterStep {
    store::StepParams result;                   // the step succeeded or failed
    std::optional<std::size_t> next;            // the step to start next, when it goes on
    std::optional<store::FinishParams> finish;  // the attempt's end, when the step failed
  };

  // An attempt the claim opened (the dispatcher's, or an external
  // worker's), its writes made by `node`; `log_path` goes into its end.
  // `job` must outlive the attempt.
  static Attempt FromClaim(const config::JobConfig& job, const store::ClaimedRun& claim,
                           std::string node, std::string log_path = "");
  // The attempt holding `lease` on `run` (an external worker's later
  // report), with the ledger's `steps` of the run, its writes made by `node`.
  static Attempt FromLease(const config::JobConfig& job, const store::RunRecord& run,
                           const store::RunLease& lease, const std::vector<store::StepState>& steps,
                           std::string node);

  // The reaper's end of an attempt whose lease expired: lease_expired, an
  // uncertain end, retried when the step that was running is idempotent or
  // none was (between steps), else unknown; applied only while the lease
  // is still expired. `job` null: the job left the config (default retry
  // policy; only "no step running" counts as safe).
  static store::FinishParams LeaseExpired(const config::JobConfig* job,
                                          const store::ExpiredLease& lease, store::Instant now,
                                          double jitter_sample);

  const config::JobConfig& job() const { return *job_; }
  int64_t run_id() const { return run_.id; }
  int64_t token() const { return token_; }
  int number() const { return number_; }

  // The job's step named `name`, by index; none when the job has no such
  // step (a name from outside: an HTTP route).
  std::optional<std::size_t> Find(const std::string& name) const;
  ledger::StepStatus Status(std::size_t step) const { return steps_[step]; }
  // The first step not succeeded: the one this attempt is at; none when
  // every step has succeeded.
  std::optional<std::size_t> Current() const;
  // The first step after `step` not succeeded.
  std::optional<std::size_t> NextAfter(std::size_t step) const;
  // The first step running (the claim started it); none between steps.
  std::optional<std::size_t> Running() const;

  // What a handler or a worker may know of the attempt, at `step` (none:
  // no step). `effects` and `cancel` are the caller's to set.
  RunContext Context(std::optional<std::size_t> step) const;

  // The write of `step`'s new state, which this attempt then takes as done.
  store::StepParams StepWrite(std::size_t step, ledger::StepStatus status, store::Instant now);

  // `step` ended as `end`: succeeded, the attempt goes on at the next step
  // not succeeded (none after the last: the caller ends the attempt with
  // End); otherwise the step failed and the attempt ends with it (`finish`,
  // its decision drawing one jitter sample). Both on the clock of `now`.
  AfterStep StepEnded(std::size_t step, const EndOfStep& end, store::Instant now,
                      const JitterSample& jitter);

  // The attempt's end after `step` (none: no step ran in it) ended as
  // `end`: the end write with its end class, the step's idempotence and
  // the attempt's retry budget deciding the run (ledger::DecideAfterAttempt;
  // a retry's backoff counts from `now`).
  store::FinishParams End(std::optional<std::size_t> step, const EndOfStep& end, store::Instant now,
                          double jitter_sample) const;

  // The end of an attempt the node's drain stops: back to pending at once
  // (end class signal). After `step` was cancelled, or, with no step, an
  // attempt claimed ahead that never started: given back to the retry
  // budget, since a restart is not a try.
  store::FinishParams ReleasedAtShutdown(std::optional<std::size_t> step, const EndOfStep& end,
                                         store::Instant now, std::string reason) const;

 private:
  Attempt(const config::JobConfig& job, store::RunRecord run,
          const std::vector<store::StepState>& steps);
  store::FinishParams Finish(std::optional<std::size_t> step, const EndOfStep& end,
                             store::Instant now) const;

  const config::JobConfig* job_;
  store::RunRecord run_;
  int number_ = 0;
  int64_t token_ = 0;
  std::string node_;
  std::string log_path_;
  int budget_attempts_ = 0;
  store::Instant budget_started_at_;
  std::vector<ledger::StepStatus> steps_;  // by the job's step index
};

// The step's own last line of output in an attempt's tail: cronledger's
// "== ... ==" lines skipped, at most 200 bytes (cut where a UTF-8 character
// begins), bytes that are not UTF-8 as U+FFFD; "" when it printed nothing.
// serve's log and alert notices show it.
std::string LastOutputLine(const std::string& tail);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_ATTEMPT_H_
