// Whether this node can reach its store, for logs and GET /metrics
// (docs/metrics.md, per node): every store call of the serve loop and the
// dispatcher reports its result here. A call that failed because the
// database could not be used (unreachable, the connection lost, a commit
// whose outcome is unknown: kUnavailable or kIOError) is counted; the
// first such failure after a success logs the outage once, and the first
// write that succeeds after it logs its end, so an outage is two log lines,
// however long it lasts. Only a write ends it: on a full disk reads and
// empty transactions still succeed while nothing can be written. Answers
// of the ledger (a stale token, a conflict) are successes here: the store
// was reached.
#ifndef CRONLEDGER_ENGINE_STORE_HEALTH_H_
#define CRONLEDGER_ENGINE_STORE_HEALTH_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "cronledger/status.h"

namespace cronledger::engine {

// True for the failures that say the store could not be used (as opposed
// to an answer of the ledger).
bool IsStoreFailure(const Status& s);

// What a call did when it succeeded: read (or wrote nothing), or wrote.
enum class StoreCall { kRead, kWrite };

class StoreHealth {
 public:
  // Records the result of one store call by `who` ("planner", "claim", ...).
  // True when `s` is a store failure, which is then logged here (once per
  // outage): the caller need not log it again on every retry. A success
  // ends an outage only for a call that wrote (`call`). Thread-safe.
  bool Observe(const Status& s, std::string_view who, StoreCall call = StoreCall::kRead);

  // Failed calls so far.
  int64_t errors() const { return errors_; }
  // False from a failure until the next write that succeeds.
  bool up() const { return up_; }

 private:
  std::atomic<int64_t> errors_{0};
  std::atomic<bool> up_{true};
  std::mutex mu_;             // orders the transition log lines
  int64_t outage_errors_ = 0;  // failed calls in the current outage; guarded by mu_
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_STORE_HEALTH_H_
