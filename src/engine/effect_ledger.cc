#include "engine/effect_ledger.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cronledger::engine {

StoreEffectLedger::StoreEffectLedger(EffectWriter& writer, Clock& clock, std::string node,
                                     uint64_t output_cap)
    : writer_(writer), clock_(clock), node_(std::move(node)), output_cap_(output_cap) {}

int StoreEffectLedger::Refused(const RunContext& ctx, std::string_view key,
                               const Status& s) const {
  switch (s.code()) {
    case StatusCode::kStaleLease: return kEffectFenced;
    case StatusCode::kFailedPrecondition: return kEffectMismatch;
    case StatusCode::kInvalidArgument: return kEffectUsage;
    default: break;
  }
  // In progress elsewhere (kConflict), or the store failed: try again later.
  spdlog::warn("run {} ({}): effect \"{}\": {}", ctx.run_id, ctx.run_key, key, s.ToString());
  return kEffectUnavailable;
}

int StoreEffectLedger::Settle(const RunContext& ctx, std::string_view key,
                              const EffectResult& r, std::string* output) const {
  std::string result = r.output.substr(0, output_cap_);
  Status s;
  if (r.exit_status == 0) {
    store::EffectCommitParams p;
    p.run_id = ctx.run_id;
    p.token = ctx.fencing_token;
    p.key = std::string(key);
    p.exit_status = 0;
    p.result = result;
    p.now = store::ToInstant(clock_.Now());
    p.node = node_;
    s = writer_.Commit(p);
  } else {
    store::EffectFailParams p;
    p.run_id = ctx.run_id;
    p.token = ctx.fencing_token;
    p.key = std::string(key);
    p.exit_status = r.exit_status;
    p.result = result;
    p.now = store::ToInstant(clock_.Now());
    p.node = node_;
    s = writer_.Fail(p);
  }
  if (!s.ok()) {
    // It happened (or not), but the record did not change: the key stays
    // started, in doubt for the next attempt.
    return Refused(ctx, key, s);
  }
  if (output) *output = std::move(result);
  return r.exit_status;
}

int StoreEffectLedger::Run(const RunContext& ctx, std::string_view key,
                           std::string_view fingerprint, const EffectFn& effect,
                           const EffectFn& reconcile, std::string* output) const {
  if (!effect) return kEffectUsage;
  // A second call for the same key in this attempt must not do it again
  // when the first one's outcome was lost (it threw, the store was away):
  // each call is its own request.
  const std::string request = fmt::format("inprocess-{}", ++calls_);
  const auto begin = [&] {
    store::EffectBeginParams p;
    p.run_id = ctx.run_id;
    p.token = ctx.fencing_token;
    p.key = std::string(key);
    p.fingerprint = std::string(fingerprint);
    p.now = store::ToInstant(clock_.Now());
    p.node = node_;
    p.request = request;
    return writer_.Begin(p);
  };
  auto begun = begin();
  if (!begun.ok()) return Refused(ctx, key, begun.status());
  if (begun->outcome == store::EffectBeginOutcome::kReplay) {
    if (output) *output = begun->effect.result;
    return 0;
  }
  if (begun->outcome == store::EffectBeginOutcome::kInDoubt) {
    if (!reconcile) return kEffectInDoubt;
    EffectResult r;
    try {
      r = reconcile();
    } catch (const std::exception& e) {
      spdlog::warn("run {} ({}): reconciling effect \"{}\" threw: {}", ctx.run_id, ctx.run_key,
                   key, e.what());
      return kEffectInDoubt;
    }
    if (r.exit_status == 0) return Settle(ctx, key, r, output);
    if (r.exit_status != 1) return kEffectInDoubt;
    // It did not happen: record that, and do it now.
    if (int failed = Settle(ctx, key, {1, r.output}, nullptr); failed != 1) return failed;
    begun = begin();
    if (!begun.ok()) return Refused(ctx, key, begun.status());
    if (begun->outcome != store::EffectBeginOutcome::kProceed) return kEffectInDoubt;
  }
  EffectResult r;
  try {
    r = effect();
  } catch (const std::exception& e) {
    // It may have happened: leave the key started, in doubt for later.
    spdlog::warn("run {} ({}): effect \"{}\" threw, its outcome is unknown: {}", ctx.run_id,
                 ctx.run_key, key, e.what());
    return kEffectInDoubt;
  }
  return Settle(ctx, key, r, output);
}

namespace {
ledger::CheckpointScope ToLedger(CheckpointScope scope) {
  return scope == CheckpointScope::kPartition ? ledger::CheckpointScope::kPartition
                                              : ledger::CheckpointScope::kRun;
}
}  // namespace

int StoreEffectLedger::SetCheckpoint(const RunContext& ctx, CheckpointScope scope,
                                     std::string_view value) const {
  store::CheckpointSetParams p;
  p.run_id = ctx.run_id;
  p.token = ctx.fencing_token;
  p.scope = ToLedger(scope);
  p.value = std::string(value);
  p.now = store::ToInstant(clock_.Now());
  p.node = node_;
  if (Status s = writer_.SetCheckpoint(p); !s.ok()) return Refused(ctx, "(checkpoint)", s);
  return 0;
}

int StoreEffectLedger::GetCheckpoint(const RunContext& ctx, CheckpointScope scope,
                                     std::string* value) const {
  auto checkpoints = writer_.Checkpoints(ctx.run_id);
  if (!checkpoints.ok()) return Refused(ctx, "(checkpoint)", checkpoints.status());
  const auto& record = scope == CheckpointScope::kPartition ? checkpoints->partition
                                                            : checkpoints->run;
  if (value) *value = record ? record->value : "";
  return 0;
}

}  // namespace cronledger::engine
