#include "ops/impact_preview.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>

#include "common/text.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::ops {
namespace {

using ledger::RunState;

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return Hex(digest, len);
}

bool Missing(const engine::ExpectedKey& k) {
  return k.cause == "never_planned" || k.cause == "misfired" || k.cause == "awaiting_approval";
}

// Whether the action puts this key back to work.
bool Queues(const ImpactRequest& r, const engine::ExpectedKey& k) {
  const RunState* state = k.run ? &k.run->state : nullptr;
  if (state && (*state == RunState::kPending || *state == RunState::kRunning)) return false;
  if (r.action == ImpactAction::kBackfill) {
    // An operator's backfill of a range is the approval of the keys in it
    // that wait for one; waived ones (skipped or cancelled) only when asked.
    if (k.waived) return r.include_waived;
    return Missing(k);
  }
  if (k.waived) return r.include_waived && r.only == RerunScope::kAll;
  if (state && *state == RunState::kSucceeded) return r.force && r.only == RerunScope::kAll;
  switch (r.only) {
    case RerunScope::kFailed: return state && *state == RunState::kFailed;
    case RerunScope::kUnknown: return state && *state == RunState::kUnknown;
    case RerunScope::kMissing: return Missing(k);
    case RerunScope::kAll:
      return Missing(k) ||
             (state && (*state == RunState::kFailed || *state == RunState::kUnknown));
  }
  return false;
}

// Why a key the action leaves alone is left alone, and what would queue
// it (a template, as RepeatHint's: TEXT and --config as the caller's).
// Empty for a succeeded key, which the counts explain.
std::pair<std::string, std::string> WhyNotQueued(const ImpactRequest& r, const std::string& job,
                                                 const engine::ExpectedKey& k) {
  const RunState* state = k.run ? &k.run->state : nullptr;
  const auto rerun = [&](std::string_view extra) {
    return fmt::format("cronledger rerun --job {} --date {} --partition {}{} --reason TEXT", job,
                       k.business_date, k.partition, extra);
  };
  if (state && (*state == RunState::kPending || *state == RunState::kRunning)) {
    return {fmt::format("{}: queued or running already", ledger::Name(*state)), ""};
  }
  if (k.waived) {
    return {fmt::format("waived ({}) on purpose", k.cause),
            r.action == ImpactAction::kBackfill
                ? fmt::format("cronledger backfill --job {} --from {} --to {} --partition {} "
                              "--include-waived --reason TEXT",
                              job, k.business_date, k.business_date, k.partition)
                : rerun(" --include-waived")};
  }
  if (state && (*state == RunState::kFailed || *state == RunState::kUnknown)) {
    if (r.action == ImpactAction::kBackfill) {
      return {fmt::format("{}: a backfill queues only missing keys", ledger::Name(*state)),
              fmt::format("cronledger retry {} --reason TEXT", k.run->id)};
    }
    return {fmt::format("{}: not in --only {}", ledger::Name(*state), Name(r.only)),
            rerun(fmt::format(" --only {}", ledger::Name(*state)))};
  }
  if (state && *state == RunState::kSucceeded) {
    if (r.action == ImpactAction::kRerun && !r.force) {
      return {"succeeded: rerunning it needs --force", rerun(" --force")};
    }
    return {"", ""};
  }
  if (r.action == ImpactAction::kRerun && Missing(k)) {
    return {fmt::format("{}: not in --only {}", k.cause, Name(r.only)), rerun(" --only missing")};
  }
  return {k.cause.empty() ? std::string("not due") : k.cause, ""};
}

// Keys not queued listed in a preview; the counts cover the rest.
constexpr std::size_t kNotQueuedListed = 1000;

std::string_view EventType(ImpactAction a) {
  return a == ImpactAction::kBackfill ? ledger::event::kBackfill : ledger::event::kRerun;
}

std::string RequestLine(const ImpactRequest& r) {
  return fmt::format("{} only={} force={} include_waived={}\n", EventType(r.action),
                     Name(r.only), r.force, r.include_waived);
}

}  // namespace

nlohmann::ordered_json ImpactPreview::Json() const {
  nlohmann::ordered_json j = {{"preview_digest", digest},
          {"expected", expected},
          {"succeeded", succeeded},
          {"failed", failed},
          {"unknown", unknown},
          {"missing", missing},
          {"waived", waived},
          {"in_progress", in_progress},
          {"effects_committed", effects_committed},
          {"would_queue", would_queue}};
  if (action == ImpactAction::kRerun) j["succeeded_left_alone"] = succeeded_left_alone;
  if (action == ImpactAction::kBackfill) j["awaiting_approval"] = awaiting_approval;
  nlohmann::ordered_json left = nlohmann::ordered_json::array();
  for (const auto& n : not_queued) {
    nlohmann::ordered_json item = {{"run_key", n.run_key}, {"why", n.why}};
    item["command"] =
        n.command.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(n.command);
    left.push_back(std::move(item));
  }
  j["not_queued"] = std::move(left);
  j["not_queued_total"] = not_queued_total;
  return j;
}

Result<ImpactPreview> PreviewImpact(store::Store& store, const config::JobConfig& job,
                                    const ImpactRequest& request, store::Instant now) {
  ImpactPreview p;
  p.action = request.action;
  std::string state_lines = RequestLine(request);
  engine::GapScanner scanner(store);
  engine::GapScanParams params;
  params.from = request.from;
  params.to = request.to;
  params.now = now;
  params.include_waived = true;
  const std::string tzdata = TzdataVersion();
  const auto& only = request.partitions;
  Status s = scanner.ForEachKey(job, params, [&](const engine::ExpectedKey& k) -> Status {
    if (!only.empty() && std::find(only.begin(), only.end(), k.partition) == only.end()) {
      return Status::Ok();
    }
    const std::string run_key = job.name + "/" + k.partition + "/" + k.period;
    ++p.expected;
    state_lines += run_key + " ";
    if (k.run) {
      state_lines += ledger::Name(k.run->state);
      if (k.run->reason) state_lines += ":" + std::string(ledger::Name(*k.run->reason));
      auto effects = store.EffectList(k.run->id);
      if (!effects.ok()) return effects.status();
      for (const auto& e : *effects) {
        if (e.state == ledger::EffectState::kCommitted && e.run_id == k.run->id) {
          ++p.effects_committed;
        }
      }
    } else {
      state_lines += "none";
    }
    state_lines += "\n";
    const RunState* state = k.run ? &k.run->state : nullptr;
    if (k.waived) {
      ++p.waived;
    } else if (Missing(k)) {
      ++p.missing;
    } else if (state && *state == RunState::kSucceeded) {
      ++p.succeeded;
      if (request.action == ImpactAction::kRerun && !request.force &&
          request.only == RerunScope::kAll) {
        ++p.succeeded_left_alone;
      }
    } else if (state && *state == RunState::kFailed) {
      ++p.failed;
    } else if (state && *state == RunState::kUnknown) {
      ++p.unknown;
    } else {
      ++p.in_progress;
    }
    if (Queues(request, k)) {
      store::RequeueKey key{k.ToQueueKey(tzdata), std::nullopt};
      if (state) key.seen = *state;
      if (state && *state == RunState::kAwaitingApproval) ++p.awaiting_approval;
      p.keys.push_back(std::move(key));
      p.would_queue.push_back(run_key);
    } else if (auto [why, command] = WhyNotQueued(request, job.name, k); !why.empty()) {
      if (p.not_queued.size() < kNotQueuedListed) {
        p.not_queued.push_back({run_key, std::move(why), std::move(command)});
      }
      ++p.not_queued_total;
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  p.digest = Sha256Hex(state_lines);
  return p;
}

Result<ImpactOutcome> ApplyImpact(store::Store& store, const config::JobConfig& job,
                                  const ImpactRequest& request,
                                  const std::optional<std::string>& preview_digest,
                                  const Actor& who, store::Instant now) {
  ImpactOutcome out;
  auto preview = PreviewImpact(store, job, request, now);
  if (!preview.ok()) return preview.status();
  out.preview = std::move(*preview);
  if (preview_digest && *preview_digest != out.preview.digest) {
    out.kind = ImpactOutcome::Kind::kStale;
    return out;
  }
  if (out.preview.keys.empty()) {
    out.kind = ImpactOutcome::Kind::kNothingToDo;
    return out;
  }
  store::RequeueParams q;
  q.job = job.name;
  q.keys = out.preview.keys;
  const bool rerun = request.action == ImpactAction::kRerun;
  q.from_first_step = rerun && request.force;
  q.event_type = std::string(EventType(request.action));
  q.actor = who.actor;
  q.on_behalf_of = who.on_behalf_of;
  q.reason = who.reason;
  q.now = now;
  nlohmann::json details = {{"from_date", FormatDate(request.from)},
                            {"to_date", FormatDate(request.to)},
                            {"preview_digest", out.preview.digest}};
  if (rerun) {
    details["only"] = Name(request.only);
    details["force"] = request.force;
  }
  if (!request.partitions.empty()) details["partitions"] = request.partitions;
  // The keys that waited for approval: this action, with its reason and
  // actor, is their approval.
  if (out.preview.awaiting_approval > 0) details["approved"] = out.preview.awaiting_approval;
  q.details = details.dump();
  auto done = store.RunRequeue(q);
  if (done.status().code() == StatusCode::kFailedPrecondition) {
    auto fresh = PreviewImpact(store, job, request, now);
    if (!fresh.ok()) return fresh.status();
    out.preview = std::move(*fresh);
    out.kind = ImpactOutcome::Kind::kStale;
    return out;
  }
  if (!done.ok()) return done.status();
  out.result = std::move(*done);
  return out;
}

}  // namespace cronledger::ops
