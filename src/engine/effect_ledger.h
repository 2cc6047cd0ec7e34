// The effect ledger behind RunContext::Effect for in-process handlers: the
// store's effect records (begin, commit, fail), fenced by the attempt's
// token, with the answers of `cronledger effect run`. The writes go through
// an EffectWriter, so concurrent handlers share store transactions (group
// commit).
#ifndef CRONLEDGER_ENGINE_EFFECT_LEDGER_H_
#define CRONLEDGER_ENGINE_EFFECT_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "engine/effect_writer.h"

namespace cronledger::engine {

class StoreEffectLedger final : public EffectLedger {
 public:
  // `writer` and `clock` must outlive it. `output_cap`: the most bytes of an
  // effect's output that are stored.
  StoreEffectLedger(EffectWriter& writer, Clock& clock, std::string node, uint64_t output_cap);

  int Run(const RunContext& ctx, std::string_view key, std::string_view fingerprint,
          const EffectFn& effect, const EffectFn& reconcile, std::string* output) const override;
  int SetCheckpoint(const RunContext& ctx, CheckpointScope scope,
                    std::string_view value) const override;
  int GetCheckpoint(const RunContext& ctx, CheckpointScope scope,
                    std::string* value) const override;

 private:
  // Commits (exit 0) or fails the key with `r`; the answer for the caller.
  int Settle(const RunContext& ctx, std::string_view key, const EffectResult& r,
             std::string* output) const;
  // The answer for a store error.
  int Refused(const RunContext& ctx, std::string_view key, const Status& s) const;

  EffectWriter& writer_;
  Clock& clock_;
  std::string node_;
  uint64_t output_cap_;
  // Names each Run() call (EffectBeginParams::request).
  mutable std::atomic<uint64_t> calls_{0};
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_EFFECT_LEDGER_H_
