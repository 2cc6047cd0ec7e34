#include "engine/unknown_outcome_settler.h"

#include <algorithm>
#include <chrono>
#include <cstddef>

#include <spdlog/spdlog.h>

#include "ledger/attempt_policy.h"

namespace cronledger::engine {

UnknownOutcomeSettler::UnknownOutcomeSettler(store::Store& store, Clock& clock,
                                             StoreHealth* health)
    : store_(store), clock_(clock), health_(health) {}

void UnknownOutcomeSettler::Observe(const Status& s, std::string_view who, StoreCall call) {
  if (health_ != nullptr) health_->Observe(s, who, call);
}

Result<UnknownOutcomeSettler::Found> UnknownOutcomeSettler::Recheck(
    const store::WorkerWrite& write) {
  const int64_t run_id = write.finish ? write.finish->run_id : write.step->run_id;
  const int64_t token = write.finish ? write.finish->token : write.step->token;
  if (write.finish) {
    // An attempt is ended once: by its worker, or by the reaper after its
    // lease expired (lease_expired, which a worker never writes).
    auto attempts = store_.AttemptList(run_id);
    if (!attempts.ok()) return attempts.status();
    for (const auto& a : *attempts) {
      if (a.token != token || !a.ended_at) continue;
      return a.end_class == ledger::Name(ledger::EndClass::kLeaseExpired) ? Found::kLeaseMoved
                                                                          : Found::kApplied;
    }
  }
  auto lease = store_.RunGetLease(run_id);
  if (!lease.ok()) {
    const StatusCode code = lease.status().code();
    if (code == StatusCode::kFailedPrecondition || code == StatusCode::kNotFound) {
      return Found::kLeaseMoved;  // the run is not running any more
    }
    return lease.status();
  }
  if (lease->token != token) return Found::kLeaseMoved;
  if (write.finish) return Found::kNotApplied;  // the attempt is open and still this one
  // A step's new state alone: only this attempt writes its steps.
  auto steps = store_.StepList(run_id);
  if (!steps.ok()) return steps.status();
  for (const auto& st : *steps) {
    if (st.name == write.step->step) {
      return st.state == write.step->state ? Found::kApplied : Found::kNotApplied;
    }
  }
  return Found::kNotApplied;
}

std::vector<Status> UnknownOutcomeSettler::Settle(const std::vector<store::WorkerWrite>& writes,
                                                  const Status& failure, std::stop_token stop) {
  std::vector<Status> results(writes.size(), failure);
  std::vector<std::size_t> open(writes.size());
  for (std::size_t i = 0; i < open.size(); ++i) open[i] = i;
  spdlog::warn("dispatcher: {} write(s) of a transaction whose outcome is unknown ({}); "
               "re-checking them before writing anything again",
               writes.size(), failure.ToString());
  std::chrono::milliseconds backoff{50};
  int reapplied = 0;
  for (;;) {
    std::vector<std::size_t> again;      // not applied: write them again
    std::vector<std::size_t> undecided;  // the ledger could not be read yet
    for (std::size_t k = 0; k < open.size(); ++k) {
      const std::size_t i = open[k];
      auto found = Recheck(writes[i]);
      Observe(found.status(), "re-check");
      if (!found.ok()) {
        if (!IsStoreFailure(found.status())) {
          results[i] = found.status();
          continue;
        }
        // Still away: the rest would fail the same way.
        undecided.insert(undecided.end(), open.begin() + static_cast<std::ptrdiff_t>(k),
                         open.end());
        break;
      }
      switch (*found) {
        case Found::kApplied: results[i] = Status::Ok(); break;
        case Found::kLeaseMoved:
          results[i] = Status(StatusCode::kStaleLease,
                              "the lease moved on before the outcome of this write was known");
          break;
        case Found::kNotApplied: again.push_back(i); break;
      }
    }
    if (!again.empty()) {
      std::vector<store::WorkerWrite> batch;
      for (std::size_t i : again) batch.push_back(writes[i]);
      auto r = store_.RunApplyWrites(batch);
      Observe(r.status(), "worker writes", StoreCall::kWrite);
      if (r.ok()) {
        for (std::size_t k = 0; k < again.size(); ++k) results[again[k]] = (*r)[k];
        reapplied += static_cast<int>(again.size());
      } else if (IsStoreFailure(r.status())) {
        undecided.insert(undecided.end(), again.begin(), again.end());  // unknown again
      } else {
        for (std::size_t i : again) results[i] = r.status();
      }
    }
    open = std::move(undecided);
    if (open.empty()) break;
    if (stop.stop_requested() || abandon_.stop_requested()) {
      spdlog::error("dispatcher: stopping with {} write(s) of unknown outcome; their leases "
                    "will expire and the reaper decides",
                    open.size());
      break;
    }
    clock_.SleepFor(backoff, abandon_.get_token());
    backoff = std::min(backoff * 2, std::chrono::milliseconds{2000});
  }
  spdlog::info("dispatcher: settled {} write(s) of unknown outcome: {} applied again, the "
               "others had been applied or their leases had moved on",
               writes.size(), reapplied);
  return results;
}

}  // namespace cronledger::engine
