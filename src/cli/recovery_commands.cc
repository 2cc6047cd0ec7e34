#include "cli/recovery_commands.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

bool Blank(const std::optional<std::string>& s) {
  return !s || s->find_first_not_of(" \t\r\n") == std::string::npos;
}

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

struct Preview {
  int expected = 0, succeeded = 0, failed = 0, unknown = 0, missing = 0, waived = 0,
      in_progress = 0, effects_committed = 0;
  std::vector<store::QueueKey> keys;
  std::vector<std::string> would_queue;
  std::string digest;

  ordered_json Json() const {
    return {{"preview_digest", digest},    {"expected", expected},
            {"succeeded", succeeded},      {"failed", failed},
            {"unknown", unknown},          {"missing", missing},
            {"waived", waived},            {"in_progress", in_progress},
            {"effects_committed", effects_committed}, {"would_queue", would_queue}};
  }
};

// What a backfill of the window would find and do. The digest covers every
// key's state, so any change to them since the preview shows.
Result<Preview> BackfillPreview(store::Store& store, const config::JobConfig& job,
                                const BackfillArgs& args, std::chrono::year_month_day from,
                                std::chrono::year_month_day to, Clock::TimePoint now) {
  Preview p;
  std::string state_lines;
  engine::GapScanner scanner(store);
  engine::GapScanParams params;
  params.from = from;
  params.to = to;
  params.now = store::ToInstant(now);
  params.include_waived = true;
  const std::string tzdata = TzdataVersion();
  Status s = scanner.ForEachKey(job, params, [&](const engine::ExpectedKey& k) -> Status {
    if (!args.partitions.empty() &&
        std::find(args.partitions.begin(), args.partitions.end(), k.partition) ==
            args.partitions.end()) {
      return Status::Ok();
    }
    const std::string run_key = job.name + "/" + k.partition + "/" + k.period;
    ++p.expected;
    const std::string state =
        k.run ? std::string(ledger::Name(k.run->state)) +
                    (k.run->reason ? ":" + std::string(ledger::Name(*k.run->reason)) : "")
              : "none";
    state_lines += run_key + " " + state + "\n";
    if (k.run) {
      auto effects = store.EffectList(k.run->id);
      if (!effects.ok()) return effects.status();
      for (const auto& e : *effects) {
        if (e.state == ledger::EffectState::kCommitted) ++p.effects_committed;
      }
    }
    bool queue = false;
    if (k.waived) {
      ++p.waived;
      queue = args.include_waived && k.run && k.run->state == ledger::RunState::kSkipped;
    } else if (k.cause == "never_planned" || k.cause == "misfired") {
      ++p.missing;
      queue = true;
    } else if (k.cause == "awaiting_approval") {
      ++p.missing;
    } else if (k.run && k.run->state == ledger::RunState::kSucceeded) {
      ++p.succeeded;
    } else if (k.run && k.run->state == ledger::RunState::kFailed) {
      ++p.failed;
    } else if (k.run && k.run->state == ledger::RunState::kUnknown) {
      ++p.unknown;
    } else {
      ++p.in_progress;
    }
    if (queue) {
      p.keys.push_back(k.ToQueueKey(tzdata));
      p.would_queue.push_back(run_key);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  p.digest = Sha256Hex(state_lines + (args.include_waived ? "include_waived\n" : ""));
  return p;
}

void PrintPreview(const Preview& p, const std::string& job, bool json, std::ostream& out) {
  if (json) {
    out << api::Dump(p.Json(), 2) << "\n";
    return;
  }
  out << fmt::format(
      "backfill of {}: {} expected, {} succeeded, {} failed, {} unknown, {} missing, {} waived, "
      "{} in progress; {} effect(s) already committed (never sent again)\n",
      job, p.expected, p.succeeded, p.failed, p.unknown, p.missing, p.waived, p.in_progress,
      p.effects_committed);
  out << fmt::format("would queue {} run(s):\n", p.would_queue.size());
  for (const auto& k : p.would_queue) out << "  " << k << "\n";
  out << "preview digest " << p.digest << "\n";
}

}  // namespace

int RunBackfill(const BackfillArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger backfill: " << message << "\n";
    return kExitUsage;
  };
  const auto from = ParseBusinessDate(args.from);
  const auto to = ParseBusinessDate(args.to);
  if (!from) return usage("--from \"" + args.from + "\" is not a date (YYYY-MM-DD)");
  if (!to) return usage("--to \"" + args.to + "\" is not a date (YYYY-MM-DD)");
  if (std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
    return usage("--from " + args.from + " is after --to " + args.to);
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  JobCommand ctx;
  if (int rc = OpenJobCommand("backfill", args.config_path, args.job, &ctx, err); rc != kExitOk) {
    return rc;
  }
  const config::JobConfig* job = ctx.job;
  store::Store* store = ctx.store.get();
  const Clock::TimePoint now = clock.Now();
  auto preview = BackfillPreview(*store, *job, args, *from, *to, now);
  if (!preview.ok()) {
    err << "cronledger backfill: " << preview.status().message() << "\n";
    return ExitCodeFor(preview.status());
  }
  if (!args.yes) {
    PrintPreview(*preview, job->name, args.json, out);
    if (!args.json) out << "nothing done: run again with --yes to queue them\n";
    return kExitOk;
  }
  if (args.preview_digest && *args.preview_digest != preview->digest) {
    err << "cronledger backfill: the ledger changed since the preview "
        << *args.preview_digest << "; nothing done. The new preview:\n";
    PrintPreview(*preview, job->name, args.json, out);
    return kExitFound;
  }
  if (preview->keys.empty()) {
    err << "cronledger backfill: nothing to queue in " << args.from << ".." << args.to << "\n";
    return kExitFound;
  }
  store::QueueKeysParams q;
  q.job = job->name;
  q.keys = preview->keys;
  q.include_waived = args.include_waived;
  q.event_type = std::string(ledger::event::kBackfill);
  q.actor = args.by.value_or(DefaultActor());
  q.reason = *args.reason;
  q.now = store::ToInstant(now);
  auto queued = store->RunQueueKeys(q);
  if (!queued.ok()) {
    err << "cronledger backfill: " << queued.status().message() << "\n";
    return ExitCodeFor(queued.status());
  }
  if (args.json) {
    out << api::Dump({{"queued", queued->queued}, {"left_alone", queued->left_alone}}, 2) << "\n";
  } else {
    out << fmt::format("queued {} run(s) of {}\n", queued->queued.size(), job->name);
  }
  return kExitOk;
}

int RunApprove(const ApproveArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger approve: " << message << "\n";
    return kExitUsage;
  };
  if (args.run && (args.from || args.to)) return usage("give --run or --from/--to, not both");
  if (args.from && !ParseBusinessDate(*args.from)) {
    return usage("--from \"" + *args.from + "\" is not a date (YYYY-MM-DD)");
  }
  if (args.to && !ParseBusinessDate(*args.to)) {
    return usage("--to \"" + *args.to + "\" is not a date (YYYY-MM-DD)");
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  config::Config config;
  if (int rc = LoadConfigOrReport("approve", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("approve", config, &store, err, StoreAccess::kExisting);
      rc != kExitOk) {
    return rc;
  }
  store::ApproveParams p;
  p.job = args.job;
  p.run_id = args.run;
  p.from = args.from;
  p.to = args.to;
  p.actor = args.by.value_or(DefaultActor());
  p.reason = *args.reason;
  p.now = store::ToInstant(clock.Now());
  auto approved = store->RunApprove(p);
  if (!approved.ok()) {
    err << "cronledger approve: " << approved.status().message() << "\n";
    return ExitCodeFor(approved.status());
  }
  if (approved->empty()) {
    err << "cronledger approve: no run of " << args.job << " is awaiting approval"
        << (args.from || args.to ? " in that range" : "") << "\n";
    return kExitFound;
  }
  out << fmt::format("approved {} run(s) of {}\n", approved->size(), args.job);
  return kExitOk;
}

int RunCancel(const CancelArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger cancel: " << message << "\n";
    return kExitUsage;
  };
  if (args.run_id <= 0) return usage(fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  config::Config config;
  if (int rc = LoadConfigOrReport("cancel", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("cancel", config, &store, err, StoreAccess::kExisting);
      rc != kExitOk) {
    return rc;
  }
  const Status s = store->RunCancel(
      {args.run_id, args.by.value_or(DefaultActor()), *args.reason, store::ToInstant(clock.Now())});
  if (!s.ok()) {
    err << "cronledger cancel: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  out << fmt::format("run {} cancelled\n", args.run_id);
  return kExitOk;
}

int RunTrigger(const TriggerArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger trigger: " << message << "\n";
    return kExitUsage;
  };
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  JobCommand ctx;
  if (int rc = OpenJobCommand("trigger", args.config_path, args.job, &ctx, err); rc != kExitOk) {
    return rc;
  }
  const config::JobConfig* job = ctx.job;
  store::Store* store = ctx.store.get();
  // The latest due occurrence within the backfill horizon, by its keys.
  const Clock::TimePoint now = clock.Now();
  engine::GapScanner scanner(*store);
  engine::GapScanParams params;
  params.from = std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(
      now - job->backfill.horizon));
  params.to = std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(now) +
                                          std::chrono::days{1});
  params.now = store::ToInstant(now);
  params.include_waived = true;
  std::vector<engine::ExpectedKey> latest;
  std::vector<store::RunRecord> runs;  // the keys' runs, copied while valid
  Status s = scanner.ForEachKey(*job, params, [&](const engine::ExpectedKey& k) -> Status {
    if (!args.partitions.empty() &&
        std::find(args.partitions.begin(), args.partitions.end(), k.partition) ==
            args.partitions.end()) {
      return Status::Ok();
    }
    if (!latest.empty() && k.scheduled_at > latest.front().scheduled_at) {
      latest.clear();
      runs.clear();
    }
    engine::ExpectedKey copy = k;
    copy.run = nullptr;
    latest.push_back(copy);
    runs.push_back(k.run ? *k.run : store::RunRecord{});
    return Status::Ok();
  });
  if (!s.ok()) {
    err << "cronledger trigger: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  if (latest.empty()) {
    err << "cronledger trigger: nothing due yet for " << job->name
        << (args.partitions.empty() ? "" : " in those partitions") << "\n";
    return kExitFound;
  }
  std::vector<std::string> existing;
  for (std::size_t i = 0; i < latest.size(); ++i) {
    if (runs[i].id != 0) {
      existing.push_back(fmt::format("{}/{}/{} ({}, run {})", job->name, latest[i].partition,
                                     latest[i].period, ledger::Name(runs[i].state), runs[i].id));
    }
  }
  if (!existing.empty()) {
    err << "cronledger trigger: the latest due period exists already, nothing done (use "
           "`cronledger retry` or a rerun to repeat work):\n";
    for (const auto& e : existing) err << "  " << e << "\n";
    return kExitFound;
  }
  store::QueueKeysParams q;
  q.job = job->name;
  const std::string tzdata = TzdataVersion();
  for (const auto& k : latest) q.keys.push_back(k.ToQueueKey(tzdata));
  q.event_type = std::string(ledger::event::kTrigger);
  q.actor = args.by.value_or(DefaultActor());
  q.reason = *args.reason;
  q.now = store::ToInstant(now);
  auto queued = store->RunQueueKeys(q);
  if (!queued.ok()) {
    err << "cronledger trigger: " << queued.status().message() << "\n";
    return ExitCodeFor(queued.status());
  }
  out << fmt::format("queued {} run(s) of {} for {}\n", queued->queued.size(), job->name,
                     latest.front().period);
  return kExitOk;
}

}  // namespace cronledger::cli
