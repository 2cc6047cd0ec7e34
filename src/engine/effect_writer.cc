#include "engine/effect_writer.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <span>
#include <string>
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

// Hands the store the queued ops, lot by lot, until the queue is empty or
// the batch is full.
class EffectWriter::Source final : public store::EffectOpSource {
 public:
  Source(EffectWriter& w, std::vector<Waiter*>& batch) : w_(w), batch_(batch) {}

  std::span<store::EffectOp> Next() override {
    const std::size_t first = batch_.size();
    {
      std::lock_guard lock(w_.mu_);
      const std::size_t n = std::min(w_.queue_.size(), w_.max_batch_ - first);
      const auto end = w_.queue_.begin() + static_cast<std::ptrdiff_t>(n);
      batch_.insert(batch_.end(), w_.queue_.begin(), end);
      w_.queue_.erase(w_.queue_.begin(), end);
    }
    if (batch_.size() == first) return {};
    std::vector<store::EffectOp>& lot = w_.lots_.emplace_back();
    lot.reserve(batch_.size() - first);
    for (std::size_t i = first; i < batch_.size(); ++i) lot.push_back(std::move(*batch_[i]->op));
    return lot;
  }

 private:
  EffectWriter& w_;
  std::vector<Waiter*>& batch_;
};

void EffectWriter::Submit(store::EffectOp& op) {
  Waiter self;
  self.op = &op;
  std::unique_lock lock(mu_);
  queue_.push_back(&self);
  for (;;) {
    self.cv.wait(lock, [&] { return self.done || !committing_; });
    if (self.done) return;
    // No batch in flight: lead one now. It takes what is queued (ours
    // among it, unless max_batch ops were ahead of us; then we go round
    // again), and what queues while the store works on that.
    committing_ = true;
    lock.unlock();
    std::vector<Waiter*> batch;
    CommitBatch(batch);
    lock.lock();
    for (Waiter* w : batch) {
      w->done = true;
      if (w != &self) w->cv.notify_one();
    }
    committing_ = false;
    // Whoever queued during the COMMIT: the first of them leads the next
    // batch.
    if (!queue_.empty()) queue_.front()->cv.notify_one();
  }
}

void EffectWriter::CommitBatch(std::vector<Waiter*>& batch) {
  lots_.clear();
  Source source(*this, batch);
  Status batch_status;
  try {
    batch_status = store_.RunEffectBatch(source);
  } catch (const std::exception& e) {
    // Not expected of a store; but no caller may wait forever, nor hear
    // "done" for what may not be.
    batch_status = Internal(std::string("effect batch: ") + e.what());
    for (auto& lot : lots_) {
      for (store::EffectOp& op : lot) op.status = batch_status;
    }
  }
  ++counters_.batches;
  counters_.ops += static_cast<int64_t>(batch.size());
  if (!batch_status.ok()) ++counters_.failed_batches;
  int64_t largest = counters_.largest_batch.load();
  while (static_cast<int64_t>(batch.size()) > largest &&
         !counters_.largest_batch.compare_exchange_weak(largest,
                                                        static_cast<int64_t>(batch.size()))) {
  }
  // Back to their callers, in the order they were taken.
  std::size_t i = 0;
  for (auto& lot : lots_) {
    for (store::EffectOp& op : lot) *batch[i++]->op = std::move(op);
  }
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
