#include "cli/runs_command.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

constexpr const char* kAllStates =
    "pending, running, succeeded, failed, unknown, skipped, awaiting_approval, cancelled";

int Usage(std::ostream& err, const std::string& message) {
  err << "cronledger runs: " << message << "\n";
  return kExitUsage;
}

int ShowOne(store::Store& store, int64_t id, bool json, std::ostream& out, std::ostream& err) {
  auto detail = api::LoadRunDetail(store, id, static_cast<int>(kRunsMaxLimit));
  if (!detail.ok()) {
    err << "cronledger runs: " << detail.status().message() << "\n";
    return ExitCodeFor(detail.status());
  }
  if (json) {
    out << api::Dump(api::RunDetailJson(*detail), 2) << "\n";
    return kExitOk;
  }
  const store::RunRecord* run = &detail->run;
  const auto* steps = &detail->steps;
  const auto* attempts = &detail->attempts;
  const auto* effects = &detail->effects;
  const auto* events = &detail->events;
  const std::vector<bool>& in_doubt = detail->in_doubt;
  const std::string reason = run->reason ? std::string(ledger::Name(*run->reason)) : "-";
  out << fmt::format("run {}  {}\n", run->id, run->RunKey());
  out << fmt::format("  job            {}\n", run->job);
  out << fmt::format("  partition      {}\n", run->partition);
  out << fmt::format("  period         {}\n", run->period);
  out << fmt::format("  business date  {}\n", run->business_date);
  out << fmt::format("  scheduled at   {}\n", FormatUtc(run->scheduled_at));
  out << fmt::format("  state          {}\n", ledger::Name(run->state));
  out << fmt::format("  reason         {}\n", reason);
  out << fmt::format("  attempts       {}\n", run->attempts);
  out << fmt::format("  updated at     {}\n", FormatInstant(run->updated_at));
  if (!steps->empty()) {
    out << "\nsteps:\n";
    for (const auto& st : *steps) out << fmt::format("  {:<20} {}\n", st.name, st.state);
  }
  if (!attempts->empty()) {
    out << "\nattempts:\n";
    for (const auto& a : *attempts) {
      out << fmt::format(
          "  #{} token {} node {} {} -> {} {}{}{}\n", a.number, a.token, a.node,
          FormatInstant(a.started_at), a.ended_at ? FormatInstant(*a.ended_at) : "(running)",
          a.end_class.empty() ? "" : a.end_class,
          a.exit_status ? fmt::format(" exit {}", *a.exit_status) : "",
          a.log_path.empty() ? "" : " log " + a.log_path);
    }
  }
  if (!effects->empty()) {
    out << "\neffects:\n";
    for (std::size_t i = 0; i < effects->size(); ++i) {
      const auto& e = (*effects)[i];
      const std::string settled =
          e.settled_attempt ? fmt::format(" settled by attempt #{}", *e.settled_attempt)
          : !e.settled_by.empty() ? " resolved by " + e.settled_by
                                  : "";
      out << fmt::format("  {:<20} {}{} started by {}attempt #{}{}{}{}\n", e.key,
                         ledger::Name(e.state), in_doubt[i] ? " (in doubt)" : "",
                         e.run_id == id ? "" : fmt::format("run {} ", e.run_id),
                         e.started_attempt, settled,
                         e.exit_status ? fmt::format(" exit {}", *e.exit_status) : "",
                         e.fingerprint.empty() ? "" : " fingerprint " + e.fingerprint);
    }
  }
  out << "\nevents:\n";
  PrintEventTable(*events, out);
  return kExitOk;
}

}  // namespace

int RunRuns(const RunsArgs& args, std::ostream& out, std::ostream& err) {
  store::RunQuery q;
  if (args.run) {
    if (args.job || args.date || args.state || args.partition || args.limit) {
      return Usage(err,
                   "--run ID shows one run; do not combine it with --job, --date, --state, "
                   "--partition or --limit");
    }
    if (*args.run <= 0) return Usage(err, fmt::format("--run {}: run ids are positive", *args.run));
  } else {
    if (args.state) {
      auto state = ledger::ParseRunState(*args.state);
      if (!state) {
        return Usage(err, fmt::format("--state \"{}\" is not a run state; use one of {}",
                                      *args.state, kAllStates));
      }
      q.state = *state;
    }
    if (args.date) {
      if (!ParseBusinessDate(*args.date)) {
        return Usage(err, fmt::format("--date \"{}\" is not a date; use YYYY-MM-DD, e.g. "
                                      "2026-11-28",
                                      *args.date));
      }
      q.business_date = *args.date;
    }
    const int64_t limit = args.limit.value_or(kRunsDefaultLimit);
    if (limit < 1 || limit > kRunsMaxLimit) {
      return Usage(err,
                   fmt::format("--limit {} is out of range; use 1 to {}", limit, kRunsMaxLimit));
    }
    q.limit = static_cast<int>(limit);
    q.job = args.job;
    q.partition = args.partition;
  }

  config::Config config;
  if (int rc = LoadConfigOrReport("runs", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("runs", config, &store, err, StoreAccess::kExisting); rc != kExitOk) return rc;

  if (args.run) return ShowOne(*store, *args.run, args.json, out, err);

  auto runs = store->RunList(q);  // newest first
  if (!runs.ok()) {
    err << "cronledger runs: " << runs.status().message() << "\n";
    return ExitCodeFor(runs.status());
  }
  if (args.json) {
    ordered_json list = ordered_json::array();
    for (const auto& r : *runs) {
      auto steps = store->StepList(r.id);
      if (!steps.ok()) {
        err << "cronledger runs: " << steps.status().message() << "\n";
        return ExitCodeFor(steps.status());
      }
      list.push_back(RunJson(r, *steps));
    }
    ordered_json doc;
    doc["runs"] = std::move(list);
    out << api::Dump(doc, 2) << "\n";
    return kExitOk;
  }
  TextTable table(
      {"ID", "RUN_KEY", "STATE", "REASON", "SCHEDULED_AT", "BUSINESS_DATE", "ATTEMPTS"});
  for (const auto& r : *runs) {
    table.AddRow({std::to_string(r.id), r.RunKey(), std::string(ledger::Name(r.state)),
                  r.reason ? std::string(ledger::Name(*r.reason)) : "", FormatUtc(r.scheduled_at),
                  r.business_date, std::to_string(r.attempts)});
  }
  table.Print(out);
  return kExitOk;
}

}  // namespace cronledger::cli
