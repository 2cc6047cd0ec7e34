#include "ledger/names.h"

#include <array>
#include <utility>

namespace cronledger::ledger {
namespace {

constexpr std::array<std::pair<RunState, std::string_view>, 8> kRunStates = {{
    {RunState::kPending, "pending"},
    {RunState::kRunning, "running"},
    {RunState::kSucceeded, "succeeded"},
    {RunState::kFailed, "failed"},
    {RunState::kUnknown, "unknown"},
    {RunState::kSkipped, "skipped"},
    {RunState::kAwaitingApproval, "awaiting_approval"},
    {RunState::kCancelled, "cancelled"},
}};

constexpr std::array<std::pair<SkipReason, std::string_view>, 5> kSkipReasons = {{
    {SkipReason::kMisfired, "misfired"},
    {SkipReason::kCoalesced, "coalesced"},
    {SkipReason::kCatchupNone, "catchup_none"},
    {SkipReason::kOverlap, "overlap"},
    {SkipReason::kPaused, "paused"},
}};

constexpr std::array<std::pair<StepStatus, std::string_view>, 4> kStepStatuses = {{
    {StepStatus::kPending, "pending"},
    {StepStatus::kRunning, "running"},
    {StepStatus::kSucceeded, "succeeded"},
    {StepStatus::kFailed, "failed"},
}};

constexpr std::array<std::pair<EffectState, std::string_view>, 3> kEffectStates = {{
    {EffectState::kStarted, "started"},
    {EffectState::kCommitted, "committed"},
    {EffectState::kFailed, "failed"},
}};

constexpr std::array<std::pair<CheckpointScope, std::string_view>, 2> kCheckpointScopes = {{
    {CheckpointScope::kRun, "run"},
    {CheckpointScope::kPartition, "partition"},
}};

template <typename E, std::size_t N>
std::string_view NameIn(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, name] : table) {
    if (v == e) return name;
  }
  return "invalid";
}

template <typename E, std::size_t N>
std::optional<E> ParseIn(const std::array<std::pair<E, std::string_view>, N>& table,
                         std::string_view s) {
  for (const auto& [v, name] : table) {
    if (name == s) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view Name(RunState s) { return NameIn(kRunStates, s); }
std::string_view Name(SkipReason r) { return NameIn(kSkipReasons, r); }
std::optional<RunState> ParseRunState(std::string_view s) { return ParseIn(kRunStates, s); }
std::optional<SkipReason> ParseSkipReason(std::string_view s) {
  return ParseIn(kSkipReasons, s);
}

std::string_view Name(StepStatus s) { return NameIn(kStepStatuses, s); }
std::optional<StepStatus> ParseStepStatus(std::string_view s) { return ParseIn(kStepStatuses, s); }

std::string_view Name(EffectState s) { return NameIn(kEffectStates, s); }
std::string_view Name(CheckpointScope s) { return NameIn(kCheckpointScopes, s); }
std::optional<EffectState> ParseEffectState(std::string_view s) {
  return ParseIn(kEffectStates, s);
}
std::optional<CheckpointScope> ParseCheckpointScope(std::string_view s) {
  return ParseIn(kCheckpointScopes, s);
}

bool IsWaived(SkipReason r) { return r != SkipReason::kMisfired; }

}  // namespace cronledger::ledger
