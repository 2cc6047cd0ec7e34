#include "cli/recovery_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ops/impact_preview.h"
#include "ops/json_shapes.h"
#include "ops/operator_actions.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

// The keys a preview leaves alone, why, and what would queue each.
void PrintNotQueued(const nlohmann::ordered_json& p, std::ostream& out) {
  constexpr std::size_t kShown = 10;
  const auto& left = Field(p, "not_queued");
  if (left.empty()) return;
  const int64_t total =
      std::max<int64_t>(Integer(p, "not_queued_total"), static_cast<int64_t>(left.size()));
  out << fmt::format("not queued {} key(s):\n", total);
  for (std::size_t i = 0; i < left.size() && i < kShown; ++i) {
    const auto& k = left[i];
    const std::string command = Text(k, "command");
    out << "  " << Text(k, "run_key") << ": " << Text(k, "why")
        << (command.empty() ? "" : "; `" + command + "` queues it") << "\n";
  }
  if (total > static_cast<int64_t>(kShown)) {
    out << fmt::format("  ... and {} more (--json lists the first 1000)\n", total - kShown);
  }
}

// A preview document (ImpactPreview::Json, or the server's answer).
void PrintPreview(const nlohmann::ordered_json& p, const std::string& title, bool json,
                  std::ostream& out) {
  if (json) {
    out << ops::Dump(p, 2) << "\n";
    return;
  }
  out << fmt::format(
      "{}: {} expected, {} succeeded, {} failed, {} unknown, {} missing, {} waived, "
      "{} in progress; {} effect(s) already committed (never sent again)\n",
      title, Integer(p, "expected"), Integer(p, "succeeded"), Integer(p, "failed"),
      Integer(p, "unknown"), Integer(p, "missing"), Integer(p, "waived"),
      Integer(p, "in_progress"), Integer(p, "effects_committed"));
  if (const int64_t alone = Integer(p, "succeeded_left_alone"); alone > 0) {
    out << fmt::format("{} succeeded run(s) left alone: rerunning a succeeded run needs --force\n",
                       alone);
  }
  const auto& would_queue = Field(p, "would_queue");
  const int64_t approving = Integer(p, "awaiting_approval");
  out << fmt::format(
      "would queue {} run(s){}:\n", would_queue.size(),
      approving > 0 ? fmt::format(", approving the {} awaiting approval", approving) : "");
  for (const auto& k : would_queue) out << "  " << (k.is_string() ? k.get<std::string>() : "") << "\n";
  PrintNotQueued(p, out);
  out << "preview digest " << Text(p, "preview_digest") << "\n";
  out << (would_queue.empty() ? "nothing to queue: --yes would change nothing\n"
                              : "nothing done: run again with --yes to queue them\n");
}

struct ImpactCommand {
  std::string name;   // backfill, rerun
  std::string title;  // of the preview
  LedgerTarget target;
  ops::ImpactOrder order;
  bool json = false;
};

// What backfill and rerun take alike.
template <typename Args>
ImpactCommand CommonImpact(std::string name, std::string title, const Args& args) {
  ImpactCommand c;
  c.name = std::move(name);
  c.title = std::move(title);
  c.target = {args.config_path, args.server, args.job};
  c.order.job = args.job;
  c.order.request.partitions = args.partitions;
  c.order.request.include_waived = args.include_waived;
  c.order.yes = args.yes;
  c.order.digest = args.preview_digest;
  c.order.who = {DefaultActor(), args.reason.value_or(""), args.by.value_or("")};
  c.json = args.json;
  return c;
}

// Impact first: prints the preview, or with --yes acts on it (docs/gaps.md).
int RunImpactCommand(const ImpactCommand& c, Clock& clock, std::ostream& out,
                     std::ostream& err) {
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger(c.name, c.target, clock, &ledger, err); rc != kExitOk) return rc;
  auto answer = ledger->Impact(c.order);
  if (!answer.ok()) return Refused(c.name, answer.status(), err);
  switch (answer->kind) {
    case ops::ActionAnswer::Kind::kPreview:
      PrintPreview(answer->doc, c.title, c.json, out);
      return kExitOk;
    case ops::ActionAnswer::Kind::kStale:
      err << "cronledger " << c.name << ": the ledger changed since the preview"
          << (c.order.digest ? " " + *c.order.digest : std::string())
          << "; nothing done. The new preview:\n";
      PrintPreview(answer->doc, c.title, c.json, out);
      return kExitFound;
    case ops::ActionAnswer::Kind::kNothingToDo:
      err << "cronledger " << c.name << ": nothing to queue"
          << (Integer(answer->doc, "succeeded_left_alone") > 0
                  ? " (rerunning a succeeded run needs --force)"
                  : "")
          << "\n";
      PrintNotQueued(answer->doc, err);
      return kExitFound;
    default:
      break;
  }
  const nlohmann::ordered_json& done = answer->doc;
  if (c.json) {
    out << ops::Dump(done, 2) << "\n";
  } else {
    out << fmt::format("queued {} run(s) of {} (event {}):\n", Field(done, "queued").size(),
                       c.order.job, Text(done, "event_id"));
    // The keys, as the preview would have listed them: a `--yes` without a
    // preview first (rerun --force --yes) shows what it did all the same.
    for (const auto& k : Field(done, "run_keys")) {
      out << "  " << (k.is_string() ? k.get<std::string>() : "") << "\n";
    }
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
  if (!from) return usage(NotADate("--from", args.from));
  if (!to) return usage(NotADate("--to", args.to));
  if (std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
    return usage("--from " + args.from + " is after --to " + args.to);
  }
  // A preview records nothing: only acting needs a reason.
  if (std::string problem = ActorProblem(args.reason, args.by);
      !problem.empty() && (args.yes || args.reason)) {
    return usage(problem);
  }
  ImpactCommand c = CommonImpact(
      "backfill", "backfill of " + args.job + " " + args.from + ".." + args.to, args);
  c.order.request.action = ops::ImpactAction::kBackfill;
  c.order.request.from = *from;
  c.order.request.to = *to;
  return RunImpactCommand(c, clock, out, err);
}

int RunRerun(const RerunArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger rerun: " << message << "\n";
    return kExitUsage;
  };
  const auto date = ParseBusinessDate(args.date);
  if (!date) return usage(NotADate("--date", args.date));
  const auto only = ops::ParseRerunScope(args.only);
  if (!only) {
    return usage("--only \"" + args.only + "\" is not one of failed, missing, unknown, all");
  }
  // A preview records nothing: only acting needs a reason.
  if (std::string problem = ActorProblem(args.reason, args.by);
      !problem.empty() && (args.yes || args.reason)) {
    return usage(problem);
  }
  ImpactCommand c = CommonImpact("rerun",
                                 "rerun of " + args.job + " " + args.date + " (" + args.only +
                                     (args.force ? ", forced" : "") + ")",
                                 args);
  c.order.request.action = ops::ImpactAction::kRerun;
  c.order.request.from = c.order.request.to = *date;
  c.order.request.only = *only;
  c.order.request.force = args.force;
  return RunImpactCommand(c, clock, out, err);
}

int RunApprove(const ApproveArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger approve: " << message << "\n";
    return kExitUsage;
  };
  if (args.run && (args.from || args.to)) return usage("give --run or --from/--to, not both");
  if (args.from && !ParseBusinessDate(*args.from)) {
    return usage(NotADate("--from", *args.from));
  }
  if (args.to && !ParseBusinessDate(*args.to)) {
    return usage(NotADate("--to", *args.to));
  }
  auto acting = OpenLedgerToAct("approve", {args.config_path, args.server, {}}, args.reason,
                                args.by, clock, err);
  if (!acting.ledger) return acting.exit_code;
  const auto date = [](const std::optional<std::string>& text) {
    return text ? ParseBusinessDate(*text) : std::nullopt;
  };
  auto answer = acting.ledger->Approve(
      {args.job, date(args.from), date(args.to), args.run, std::move(acting.who)});
  if (!answer.ok()) return Refused("approve", answer.status(), err);
  if (answer->kind != ops::ActionAnswer::Kind::kDone) {
    err << "cronledger approve: " << answer->message << "\n";
    return kExitFound;
  }
  const std::size_t approved_count = Field(answer->doc, "approved").size();
  out << fmt::format("approved {} run(s) of {}\n", approved_count, args.job);
  return kExitOk;
}

int RunTrigger(const TriggerArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  auto acting = OpenLedgerToAct("trigger", {args.config_path, args.server, args.job}, args.reason,
                                args.by, clock, err);
  if (!acting.ledger) return acting.exit_code;
  auto answer =
      acting.ledger->Trigger({args.job, args.partitions, acting.who, {args.date, args.period}});
  if (!answer.ok()) {
    // A run appeared between the check and the write (nothing written).
    err << "cronledger trigger: " << answer.status().message() << "\n";
    return answer.status().code() == StatusCode::kFailedPrecondition
               ? kExitFound
               : ExitCodeFor(answer.status());
  }
  switch (answer->kind) {
    case ops::ActionAnswer::Kind::kNothingToDo:
      err << "cronledger trigger: " << answer->message << "\n";
      return kExitFound;
    case ops::ActionAnswer::Kind::kExists:
      err << "cronledger trigger: " << answer->message << ":\n";
      for (const auto& e : answer->existing) err << "  " << e << "\n";
      return kExitFound;
    default:
      break;
  }
  const auto approved = answer->doc.value("approved", 0);
  out << fmt::format(
      "queued {} run(s) of {} for {}{}\n", Field(answer->doc, "queued").size(), args.job,
      Text(answer->doc, "period"),
      approved > 0 ? fmt::format("; it approves the {} awaiting approval", approved) : "");
  return kExitOk;
}

}  // namespace cronledger::cli
