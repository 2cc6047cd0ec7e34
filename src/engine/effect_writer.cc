#include "engine/effect_writer.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <utility>

namespace cronledger::engine {

struct EffectWriter::Waiter {
  store::EffectOp* op = nullptr;
  bool done = false;  // answered; guarded by mu_
  std::condition_variable cv;
};

EffectWriter::EffectWriter(store::Store& store, std::size_t max_batch)
    : store_(store), max_batch_(std::max<std::size_t>(1, max_batch)) {}

int EffectWriter::Queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

void EffectWriter::Submit(store::EffectOp& op) {
  Waiter self;
  self.op = &op;
  std::unique_lock lock(mu_);
  queue_.push_back(&self);
  for (;;) {
    self.cv.wait(lock, [&] { return self.done || !committing_; });
    if (self.done) return;
    // No batch in flight: lead one now, with what is queued (ours among it
    // unless max_batch ops were ahead of us; then we go round again).
    committing_ = true;
    const std::size_t n = std::min(queue_.size(), max_batch_);
    std::vector<Waiter*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.unlock();
    CommitBatch(batch);
    lock.lock();
    for (Waiter* w : batch) {
      w->done = true;
      if (w != &self) w->cv.notify_one();
    }
    committing_ = false;
    // Whoever queued meanwhile: the first of them leads the next batch.
    if (!queue_.empty()) queue_.front()->cv.notify_one();
  }
}

void EffectWriter::CommitBatch(const std::vector<Waiter*>& batch) {
  ops_.clear();
  for (Waiter* w : batch) ops_.push_back(std::move(*w->op));
  Status batch_status;
  try {
    batch_status = store_.RunEffectBatch(ops_);
  } catch (const std::exception& e) {
    // Not expected of a store; but no caller may wait forever, nor hear
    // "done" for what may not be.
    batch_status = Internal(std::string("effect batch: ") + e.what());
    for (store::EffectOp& op : ops_) op.status = batch_status;
  }
  ++counters_.batches;
  counters_.ops += static_cast<int64_t>(batch.size());
  if (!batch_status.ok()) ++counters_.failed_batches;
  int64_t largest = counters_.largest_batch.load();
  while (static_cast<int64_t>(batch.size()) > largest &&
         !counters_.largest_batch.compare_exchange_weak(largest,
                                                        static_cast<int64_t>(batch.size()))) {
  }
  for (std::size_t i = 0; i < batch.size(); ++i) *batch[i]->op = std::move(ops_[i]);
}

Result<store::EffectBeginResult> EffectWriter::Begin(const store::EffectBeginParams& p) {
  store::EffectOp op{p, {}, {}};
  Submit(op);
  if (!op.status.ok()) return op.status;
  return std::move(op.begun);
}

Status EffectWriter::Commit(const store::EffectCommitParams& p) {
  store::EffectOp op{p, {}, {}};
  Submit(op);
  return op.status;
}

Status EffectWriter::Fail(const store::EffectFailParams& p) {
  store::EffectOp op{p, {}, {}};
  Submit(op);
  return op.status;
}

Status EffectWriter::SetCheckpoint(const store::CheckpointSetParams& p) {
  store::EffectOp op{p, {}, {}};
  Submit(op);
  return op.status;
}

}  // namespace cronledger::engine
