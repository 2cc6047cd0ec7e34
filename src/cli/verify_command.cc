#include "cli/verify_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

// Operator and policy actions that queued a run of the date again.
const std::set<std::string> kRequeueEvents = {"retry", "resolve", "rerun", "backfill", "approve"};

int Usage(std::ostream& err, const std::string& message) {
  err << "cronledger verify: " << message << "\n";
  return kExitUsage;
}

struct Report {
  int expected = 0;
  int succeeded = 0;
  int waived = 0;
  int attempts = 0;
  std::optional<std::chrono::sys_seconds> first_scheduled;
  std::optional<store::Instant> last_completed;
  std::map<std::string, std::map<std::string, int>> steps;  // step -> state -> count
  ordered_json reruns = ordered_json::array();
  ordered_json missing = ordered_json::array();
};

}  // namespace

int RunVerify(const VerifyArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto date = ParseBusinessDate(args.date);
  if (!date) return Usage(err, "--date \"" + args.date + "\" is not a date (YYYY-MM-DD)");
  JobCommand ctx;
  if (int rc = OpenJobCommand("verify", args.config_path, args.job, &ctx, err); rc != kExitOk) {
    return rc;
  }
  const config::JobConfig* job = ctx.job;
  store::Store* store = ctx.store.get();

  Report report;
  engine::GapScanner scanner(*store);
  engine::GapScanParams p;
  p.from = p.to = *date;
  p.now = store::ToInstant(clock.Now());
  p.include_waived = true;
  p.include_not_due = true;
  Status scanned = scanner.ForEachKey(*job, p, [&](const engine::ExpectedKey& k) -> Status {
    const std::string run_key = job->name + "/" + k.partition + "/" + k.period;
    ++report.expected;
    if (!report.first_scheduled || k.scheduled_at < *report.first_scheduled) {
      report.first_scheduled = k.scheduled_at;
    }
    if (k.run) {
      const store::RunRecord& run = *k.run;
      report.attempts += run.attempts;
      auto steps = store->StepList(run.id);
      if (!steps.ok()) return steps.status();
      for (const auto& st : *steps) ++report.steps[st.name][st.state];
      store::EventQuery q;
      q.run_id = run.id;
      q.limit = 10000;
      auto events = store->EventList(q);
      if (!events.ok()) return events.status();
      for (const auto& e : *events) {
        if (!kRequeueEvents.contains(e.type)) continue;
        report.reruns.push_back({{"run_key", run_key},
                                 {"type", e.type},
                                 {"at", FormatInstant(e.at)},
                                 {"actor", e.actor},
                                 {"reason", StringOrNull(e.reason)}});
      }
      if (run.state == ledger::RunState::kSucceeded) {
        ++report.succeeded;
        if (!report.last_completed || run.updated_at > *report.last_completed) {
          report.last_completed = run.updated_at;
        }
        return Status::Ok();
      }
    }
    if (k.waived) {
      ++report.waived;
      return Status::Ok();
    }
    const std::string cause = !k.cause.empty() ? k.cause : !k.due ? "not_due" : "in_progress";
    report.missing.push_back({{"run_key", run_key}, {"cause", cause}});
    return Status::Ok();
  });
  if (!scanned.ok()) {
    err << "cronledger verify: " << scanned.message() << "\n";
    return ExitCodeFor(scanned);
  }

  const bool complete = report.missing.empty() && report.expected > 0;
  ordered_json steps = ordered_json::object();
  for (const auto& [name, states] : report.steps) {
    ordered_json counts = ordered_json::object();
    for (const auto& [state, n] : states) counts[state] = n;
    steps[name] = std::move(counts);
  }
  if (args.json) {
    ordered_json j = {
        {"job", job->name},
        {"business_date", args.date},
        {"complete", complete},
        {"expected", report.expected},
        {"succeeded", report.succeeded},
        {"waived", report.waived},
        {"steps", steps},
        {"first_scheduled_at", report.first_scheduled
                                   ? ordered_json(FormatUtc(*report.first_scheduled))
                                   : ordered_json(nullptr)},
        {"last_completed_at", report.last_completed
                                  ? ordered_json(FormatInstant(*report.last_completed))
                                  : ordered_json(nullptr)},
        {"attempts", report.attempts},
        {"reruns", report.reruns},
        {"missing", report.missing}};
    out << api::Dump(j, 2) << "\n";
  } else {
    out << fmt::format("{} {}: {}\n", job->name, args.date,
                       complete               ? "complete"
                       : report.expected == 0 ? "INCOMPLETE (nothing is expected on this date)"
                                              : "INCOMPLETE");
    out << fmt::format("  expected {}, succeeded {}, waived {}, attempts {}\n", report.expected,
                       report.succeeded, report.waived, report.attempts);
    out << fmt::format(
        "  first scheduled {}, last completed {}\n",
        report.first_scheduled ? FormatUtc(*report.first_scheduled) : "-",
        report.last_completed ? FormatInstant(*report.last_completed) : "-");
    for (const auto& [name, states] : report.steps) {
      std::string counts;
      for (const auto& [state, n] : states) {
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
      }
      out << fmt::format("  step {}: {}\n", name, counts);
    }
    for (const auto& r : report.reruns) {
      out << fmt::format("  {} {} by {} at {}: {}\n", r["type"].get<std::string>(),
                         r["run_key"].get<std::string>(), r["actor"].get<std::string>(),
                         r["at"].get<std::string>(),
                         r["reason"].is_null() ? "-" : r["reason"].get<std::string>());
    }
    for (const auto& m : report.missing) {
      out << fmt::format("  missing {} ({})\n", m["run_key"].get<std::string>(),
                         m["cause"].get<std::string>());
    }
  }
  return complete ? kExitOk : kExitFound;
}

}  // namespace cronledger::cli
