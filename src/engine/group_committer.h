// Group commit of the dispatcher's worker writes (docs/execution.md): the
// workers hand their step results and attempts' ends to one committer
// thread, which applies everything queued meanwhile in one store
// transaction (Store::RunApplyWrites), each write fenced by its own token
// and answered in its own slot.
//
// A batch that failed for want of the database is settled by an
// UnknownOutcomeSettler, never blindly repeated.
//
// While the claim loop claims full batches back to back (a burst of runs
// fell due at once; SetClaimBurst) the committer holds writes back, so that
// the claims, which start handlers, do not queue behind them for the store
// — at most `max_held_writes` of them and for no longer than `poll`: a
// backlog that keeps every claim full must not keep finished runs
// unacknowledged, and unheartbeated, until it is gone.
#ifndef CRONLEDGER_ENGINE_GROUP_COMMITTER_H_
#define CRONLEDGER_ENGINE_GROUP_COMMITTER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <semaphore>
#include <stop_token>
#include <thread>
#include <vector>

#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "engine/store_health.h"
#include "engine/unknown_outcome_settler.h"
#include "store/store.h"

namespace cronledger::engine {

class GroupCommitter {
 public:
  struct Options {
    // How long a write may be held back for a claim burst.
    std::chrono::milliseconds poll{100};
    // Writes held back for a claim burst at most (> 0).
    int max_held_writes = 1;
    // Told of every store call's result; none: not.
    StoreHealth* health = nullptr;
    // Called on the committer thread after a batch in which some attempt's
    // end committed (runs that ended may let others be claimed).
    std::function<void()> on_ended;
    // Counted, if given: transactions, and the writes they carried.
    std::atomic<int64_t>* batches = nullptr;
    std::atomic<int64_t>* writes = nullptr;
  };

  // Starts the committer thread. `store` and `clock` must outlive it.
  GroupCommitter(store::Store& store, Clock& clock, Options options);
  // Stop().
  ~GroupCommitter();

  // Queues `write` and blocks until its batch committed: its answer.
  Status Write(store::WorkerWrite write);
  // Queues `write` without waiting; `on_commit` is called on the committer
  // thread with its answer once its batch committed (a run's last write).
  void WriteLast(store::WorkerWrite write, std::function<void(const Status&)> on_commit);

  // Whether the claim loop is in a burst (writes may be held back).
  void SetClaimBurst(bool on);
  // Whether the oldest write queued has waited a poll or longer.
  bool HeldTooLong();

  // Stops settling writes of unknown outcome: they are left to the reaper.
  void AbandonSettling() { settler_.Abandon(); }
  // Commits what is queued, then stops and joins the committer thread.
  // Writes queued after it are never answered. Idempotent.
  void Stop();

 private:
  struct PendingWrite {
    store::WorkerWrite write;
    Status result;
    std::binary_semaphore done{0};
    // Set for a run's last write: called by the committer after the commit
    // instead of releasing `done`; then the write is deleted.
    std::function<void(const Status&)> on_commit;
  };

  void CommitLoop(std::stop_token stop);
  void Queue(PendingWrite* w);
  // Whether the committer may wait for the burst: writes queued fewer than
  // max_held_writes. REQUIRES: mu_ held.
  bool MayHoldLocked() const;
  void Observe(const Status& s, std::string_view who, StoreCall call = StoreCall::kRead);

  store::Store& store_;
  Clock& clock_;
  Options options_;
  UnknownOutcomeSettler settler_;

  std::mutex mu_;
  std::condition_variable_any cv_;  // the committer waits for writes
  std::vector<PendingWrite*> writes_;
  // A burst ends when a claim finds fewer runs than it could take; a
  // backlog keeps every claim full, so the hold is also bounded
  // (max_held_writes, and held_since_ older than a poll). Guarded by mu_.
  bool claim_burst_ = false;
  std::optional<Clock::SteadyPoint> held_since_;  // the oldest queued write's time

  std::jthread thread_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_GROUP_COMMITTER_H_
