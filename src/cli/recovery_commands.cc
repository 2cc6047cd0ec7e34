#include "cli/recovery_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/impact_preview.h"
#include "api/json_shapes.h"
#include "api/operator_actions.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

bool Blank(const std::optional<std::string>& s) {
  return !s || s->find_first_not_of(" \t\r\n") == std::string::npos;
}

void PrintPreview(const api::ImpactPreview& p, const std::string& title, bool json,
                  std::ostream& out) {
  if (json) {
    out << api::Dump(p.Json(), 2) << "\n";
    return;
  }
  out << fmt::format(
      "{}: {} expected, {} succeeded, {} failed, {} unknown, {} missing, {} waived, "
      "{} in progress; {} effect(s) already committed (never sent again)\n",
      title, p.expected, p.succeeded, p.failed, p.unknown, p.missing, p.waived, p.in_progress,
      p.effects_committed);
  if (p.succeeded_left_alone > 0) {
    out << fmt::format("{} succeeded run(s) left alone: rerunning a succeeded run needs --force\n",
                       p.succeeded_left_alone);
  }
  out << fmt::format("would queue {} run(s):\n", p.would_queue.size());
  for (const auto& k : p.would_queue) out << "  " << k << "\n";
  out << "preview digest " << p.digest << "\n";
}

struct ImpactCommand {
  std::string name;   // backfill, rerun
  std::string title;  // of the preview
  std::string config_path;
  std::string job;
  api::ImpactRequest request;
  std::optional<std::string> reason;
  std::optional<std::string> by;
  bool yes = false;
  std::optional<std::string> preview_digest;
  bool json = false;
};

// What backfill and rerun take alike.
template <typename Args>
ImpactCommand CommonImpact(std::string name, std::string title, const Args& args) {
  ImpactCommand c;
  c.name = std::move(name);
  c.title = std::move(title);
  c.config_path = args.config_path;
  c.job = args.job;
  c.request.partitions = args.partitions;
  c.request.include_waived = args.include_waived;
  c.reason = args.reason;
  c.by = args.by;
  c.yes = args.yes;
  c.preview_digest = args.preview_digest;
  c.json = args.json;
  return c;
}

// Impact first: prints the preview, or with --yes acts on it (DESIGN.md).
int RunImpactCommand(const ImpactCommand& c, Clock& clock, std::ostream& out,
                     std::ostream& err) {
  JobCommand ctx;
  if (int rc = OpenJobCommand(c.name, c.config_path, c.job, &ctx, err); rc != kExitOk) return rc;
  const store::Instant now = store::ToInstant(clock.Now());
  if (!c.yes) {
    auto preview = api::PreviewImpact(*ctx.store, *ctx.job, c.request, now);
    if (!preview.ok()) {
      err << "cronledger " << c.name << ": " << preview.status().message() << "\n";
      return ExitCodeFor(preview.status());
    }
    PrintPreview(*preview, c.title, c.json, out);
    if (!c.json) out << "nothing done: run again with --yes to queue them\n";
    return kExitOk;
  }
  auto outcome = api::ApplyImpact(*ctx.store, *ctx.job, c.request, c.preview_digest,
                                  c.by.value_or(DefaultActor()), *c.reason, now);
  if (!outcome.ok()) {
    err << "cronledger " << c.name << ": " << outcome.status().message() << "\n";
    return ExitCodeFor(outcome.status());
  }
  switch (outcome->kind) {
    case api::ImpactOutcome::Kind::kStale:
      err << "cronledger " << c.name << ": the ledger changed since the preview"
          << (c.preview_digest ? " " + *c.preview_digest : std::string())
          << "; nothing done. The new preview:\n";
      PrintPreview(outcome->preview, c.title, c.json, out);
      return kExitFound;
    case api::ImpactOutcome::Kind::kNothingToDo:
      err << "cronledger " << c.name << ": nothing to queue"
          << (outcome->preview.succeeded_left_alone > 0
                  ? " (rerunning a succeeded run needs --force)"
                  : "")
          << "\n";
      return kExitFound;
    case api::ImpactOutcome::Kind::kDone:
      break;
  }
  const auto& r = outcome->result;
  if (c.json) {
    out << api::Dump({{"event_id", r.event_id},
                      {"queued", r.queued},
                      {"run_keys", outcome->preview.would_queue}},
                     2)
        << "\n";
  } else {
    out << fmt::format("queued {} run(s) of {} (event {})\n", r.queued.size(), c.job,
                       r.event_id);
  }
  return kExitOk;
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
  ImpactCommand c = CommonImpact(
      "backfill", "backfill of " + args.job + " " + args.from + ".." + args.to, args);
  c.request.action = api::ImpactAction::kBackfill;
  c.request.from = *from;
  c.request.to = *to;
  return RunImpactCommand(c, clock, out, err);
}

int RunRerun(const RerunArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger rerun: " << message << "\n";
    return kExitUsage;
  };
  const auto date = ParseBusinessDate(args.date);
  if (!date) return usage("--date \"" + args.date + "\" is not a date (YYYY-MM-DD)");
  const auto only = api::ParseRerunScope(args.only);
  if (!only) {
    return usage("--only \"" + args.only + "\" is not one of failed, missing, unknown, all");
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  ImpactCommand c = CommonImpact("rerun",
                                 "rerun of " + args.job + " " + args.date + " (" + args.only +
                                     (args.force ? ", forced" : "") + ")",
                                 args);
  c.request.action = api::ImpactAction::kRerun;
  c.request.from = c.request.to = *date;
  c.request.only = *only;
  c.request.force = args.force;
  return RunImpactCommand(c, clock, out, err);
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
  auto outcome = api::Trigger(*ctx.store, *job, args.partitions, args.by.value_or(DefaultActor()),
                              *args.reason, clock.Now());
  if (!outcome.ok()) {
    err << "cronledger trigger: " << outcome.status().message() << "\n";
    return outcome.status().code() == StatusCode::kFailedPrecondition
               ? kExitFound
               : ExitCodeFor(outcome.status());
  }
  if (outcome->kind == api::TriggerOutcome::Kind::kNothingDue) {
    err << "cronledger trigger: nothing due yet for " << job->name
        << (args.partitions.empty() ? "" : " in those partitions") << "\n";
    return kExitFound;
  }
  if (outcome->kind == api::TriggerOutcome::Kind::kExists) {
    err << "cronledger trigger: the latest due period exists already, nothing done (use "
           "`cronledger retry` or a rerun to repeat work):\n";
    for (const auto& e : outcome->existing) err << "  " << e << "\n";
    return kExitFound;
  }
  out << fmt::format("queued {} run(s) of {} for {}\n", outcome->result.queued.size(), job->name,
                     outcome->period);
  return kExitOk;
}

}  // namespace cronledger::cli
