#include "engine/group_committer.h"

#include <memory>
#include <utility>

namespace cronledger::engine {

GroupCommitter::GroupCommitter(store::Store& store, Clock& clock, Options options)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      settler_(store, clock, options_.health) {
  thread_ = std::jthread([this](std::stop_token stop) { CommitLoop(stop); });
}

GroupCommitter::~GroupCommitter() { Stop(); }

void GroupCommitter::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void GroupCommitter::Observe(const Status& s, std::string_view who, StoreCall call) {
  if (options_.health != nullptr) options_.health->Observe(s, who, call);
}

void GroupCommitter::SetClaimBurst(bool on) {
  {
    std::lock_guard lock(mu_);
    if (claim_burst_ == on) return;
    claim_burst_ = on;
  }
  if (!on) cv_.notify_one();
}

bool GroupCommitter::MayHoldLocked() const {
  return static_cast<int>(writes_.size()) < options_.max_held_writes;
}

bool GroupCommitter::HeldTooLong() {
  const Clock::SteadyPoint now = clock_.SteadyNow();
  std::lock_guard lock(mu_);
  return held_since_ && now - *held_since_ >= options_.poll;
}

void GroupCommitter::Queue(PendingWrite* w) {
  {
    std::lock_guard lock(mu_);
    if (writes_.empty()) held_since_ = clock_.SteadyNow();
    writes_.push_back(w);
  }
  cv_.notify_one();
}

Status GroupCommitter::Write(store::WorkerWrite write) {
  PendingWrite pending;
  pending.write = std::move(write);
  Queue(&pending);
  pending.done.acquire();
  return pending.result;
}

void GroupCommitter::WriteLast(store::WorkerWrite write,
                               std::function<void(const Status&)> on_commit) {
  auto pending = std::make_unique<PendingWrite>();
  pending->write = std::move(write);
  pending->on_commit = std::move(on_commit);
  Queue(pending.release());
}

void GroupCommitter::CommitLoop(std::stop_token stop) {
  std::vector<PendingWrite*> batch;
  std::vector<store::WorkerWrite> writes;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait(lock, stop,
                    [&] { return !writes_.empty() && (!claim_burst_ || !MayHoldLocked()); })) {
        if (writes_.empty()) return;
        claim_burst_ = false;  // stopping: commit what is left
        continue;
      }
      batch.swap(writes_);
      held_since_.reset();
    }
    writes.clear();
    for (PendingWrite* w : batch) writes.push_back(std::move(w->write));
    auto results = store_.RunApplyWrites(writes);
    Observe(results.status(), "worker writes", StoreCall::kWrite);
    if (!results.ok() && IsStoreFailure(results.status())) {
      results = settler_.Settle(writes, results.status(), stop);
    }
    if (options_.batches != nullptr) ++*options_.batches;
    if (options_.writes != nullptr) *options_.writes += static_cast<int64_t>(batch.size());
    bool ended = false;  // some run's end committed
    for (std::size_t i = 0; i < batch.size(); ++i) {
      batch[i]->result = results.ok() ? (*results)[i] : results.status();
      ended = ended || (batch[i]->result.ok() && writes[i].finish.has_value());
      if (batch[i]->on_commit) {
        std::unique_ptr<PendingWrite> owned(batch[i]);
        owned->on_commit(owned->result);
      } else {
        batch[i]->done.release();
      }
    }
    batch.clear();
    if (ended && options_.on_ended) options_.on_ended();
  }
}

}  // namespace cronledger::engine
