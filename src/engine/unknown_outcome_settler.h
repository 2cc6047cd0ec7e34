// Settles worker writes whose transaction failed for want of the database
// (the connection lost, perhaps at its COMMIT): their outcome is unknown,
// so they are never blindly repeated.
//
// Each write is looked up in the ledger — did the attempt end (and by whom),
// is the step in the state written, is the lease still this attempt's — and
// only what did not happen is applied again. While the database stays away
// it looks again with backoff (50 ms doubling to 2 s), until every write is
// decided, the caller's stop is requested, or Abandon() is called; what is
// still undecided then keeps the failure as its answer, and its lease
// expires for the reaper to decide (an uncertain end).
#ifndef CRONLEDGER_ENGINE_UNKNOWN_OUTCOME_SETTLER_H_
#define CRONLEDGER_ENGINE_UNKNOWN_OUTCOME_SETTLER_H_

#include <stop_token>
#include <string_view>
#include <vector>

#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "engine/store_health.h"
#include "store/store.h"

namespace cronledger::engine {

class UnknownOutcomeSettler {
 public:
  // `store` (the one the writes went to) and `clock` must outlive it;
  // `health`, if any, is told of every store call's result.
  UnknownOutcomeSettler(store::Store& store, Clock& clock, StoreHealth* health);

  // The answers to `writes`, in order, whose transaction failed with
  // `failure`: Ok for a write that is in the ledger (applied then or now),
  // kStaleLease for one whose lease moved on first, the store's answer to
  // a write applied again, `failure` for one left undecided.
  std::vector<Status> Settle(const std::vector<store::WorkerWrite>& writes, const Status& failure,
                             std::stop_token stop);

  // Stops settling, now and for good (a drain's deadline passed, or the
  // dispatcher is going away). Thread-safe.
  void Abandon() { abandon_.request_stop(); }

 private:
  enum class Found { kApplied, kNotApplied, kLeaseMoved };
  // What the ledger shows of `write`.
  Result<Found> Recheck(const store::WorkerWrite& write);
  void Observe(const Status& s, std::string_view who, StoreCall call = StoreCall::kRead);

  store::Store& store_;
  Clock& clock_;
  StoreHealth* health_;
  std::stop_source abandon_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_UNKNOWN_OUTCOME_SETTLER_H_
