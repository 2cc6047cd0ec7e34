// Group commit of the effect ledger's worker writes (docs/effects.md, "Group
// commit"): begins, commits, fails and checkpoint sets of concurrent callers
// (in-process handlers through StoreEffectLedger, HTTP workers through the
// API) are applied together in one store transaction
// (Store::RunEffectBatch), so that with `durability = "full"` they share
// one fsync instead of queueing for one each.
//
// Each call has the semantics and answers of the Store call of the same
// params: it is fenced by its own token and answered on its own (a stale
// token, a fingerprint mismatch or a conflict refuses that op only), and it
// returns only after the batch holding it committed — a kProceed begin is
// `started`, an ok commit `committed`, as durably as the store makes any
// commit (`durability = "full"`: fsynced). A database failure of the batch
// (SQLITE_BUSY or an I/O error at COMMIT, say) answers every op in it with
// that error: nothing is claimed done that is not durable.
//
// Leader/follower, no thread of its own: a caller that finds no batch being
// committed starts one at once with every op queued (its own among them),
// so a caller alone waits for nothing but its own transaction (no timer
// fills batches). While the store applies those ops, others queue; the
// leader hands them to the store in the same transaction as long as it has
// not reached its COMMIT (Store::RunEffectBatch pulls them from an
// EffectOpSource) — so callers answered by one batch, who come back at once
// with their next op, join the one in progress instead of waiting for
// another fsync. Ops that queue during the COMMIT wait; when the batch is
// done, the first of them leads the next one. Thread-safe.
#ifndef CRONLEDGER_ENGINE_EFFECT_WRITER_H_
#define CRONLEDGER_ENGINE_EFFECT_WRITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::engine {

struct EffectWriterCounters {
  std::atomic<int64_t> batches{0};         // store transactions
  std::atomic<int64_t> ops{0};             // ops they carried (ops / batches = mean batch)
  std::atomic<int64_t> failed_batches{0};  // batches the database failed as a whole
  std::atomic<int64_t> largest_batch{0};
};

class EffectWriter {
 public:
  // `store` must outlive the writer. `max_batch`: the most ops in one
  // transaction (more wait for the next one).
  explicit EffectWriter(store::Store& store, std::size_t max_batch = 256);
  EffectWriter(const EffectWriter&) = delete;
  EffectWriter& operator=(const EffectWriter&) = delete;

  // Store::EffectBegin, Store::EffectCommit, Store::EffectFail and
  // Store::CheckpointSet, group-committed.
  Result<store::EffectBeginResult> Begin(const store::EffectBeginParams& p);
  Status Commit(const store::EffectCommitParams& p);
  Status Fail(const store::EffectFailParams& p);
  Status SetCheckpoint(const store::CheckpointSetParams& p);
  // Store::CheckpointGet, read at once (reads are not batched).
  Result<store::Checkpoints> Checkpoints(int64_t run_id) { return store_.CheckpointGet(run_id); }

  const EffectWriterCounters& counters() const { return counters_; }
  // Ops waiting for the next batch (not those being committed).
  int Queued() const;

 private:
  struct Waiter;
  class Source;
  // Queues `op` and returns once it is answered.
  void Submit(store::EffectOp& op);
  // Runs one store transaction with ops taken from the queue, answers them
  // and appends their waiters to `batch` (no lock held; only the leader
  // calls it).
  void CommitBatch(std::vector<Waiter*>& batch);

  store::Store& store_;
  const std::size_t max_batch_;
  mutable std::mutex mu_;
  std::deque<Waiter*> queue_;  // guarded by mu_
  bool committing_ = false;    // a leader is committing a batch; guarded by mu_
  // The ops of the batch in progress, one vector per lot handed to the
  // store (they must not move meanwhile); only the leader uses it.
  std::deque<std::vector<store::EffectOp>> lots_;
  EffectWriterCounters counters_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_EFFECT_WRITER_H_
