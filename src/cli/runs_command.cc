#include "cli/runs_command.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"
#include "config/config.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

constexpr const char* kAllStates =
    "pending, running, succeeded, failed, unknown, skipped, awaiting_approval, cancelled";

// A single run's document (RunDetailJson) as text.
void PrintRun(const ordered_json& run, std::ostream& out) {
  const int64_t id = Integer(run, "id");
  const auto or_dash = [&](std::string_view key) {
    const std::string text = Text(run, key);
    return text.empty() ? std::string("-") : text;
  };
  out << fmt::format("run {}  {}\n", id, Text(run, "run_key"));
  out << fmt::format("  job            {}\n", Text(run, "job"));
  out << fmt::format("  partition      {}\n", Text(run, "partition"));
  out << fmt::format("  period         {}\n", Text(run, "period"));
  out << fmt::format("  business date  {}\n", Text(run, "business_date"));
  out << fmt::format("  scheduled at   {}\n", Text(run, "scheduled_at"));
  out << fmt::format("  state          {}\n", Text(run, "state"));
  out << fmt::format("  reason         {}\n", or_dash("reason"));
  out << fmt::format("  attempts       {}\n", Text(run, "attempts"));
  out << fmt::format("  updated at     {}\n", Text(run, "updated_at"));
  if (const auto& steps = Field(run, "steps"); !steps.empty()) {
    out << "\nsteps:\n";
    for (const auto& st : steps) {
      out << fmt::format("  {:<20} {}\n", Text(st, "name"), Text(st, "state"));
    }
  }
  if (const auto& attempts = Field(run, "attempt_list"); !attempts.empty()) {
    out << "\nattempts:\n";
    for (const auto& a : attempts) {
      const std::string ended = Text(a, "ended_at");
      const std::string log = Text(a, "log_path");
      const std::string step = Text(a, "step");
      // How it ended: a timeout or a signal has no exit status, never 0.
      std::string how = ended.empty() ? "running" : Text(a, "end_class");
      if (!ended.empty()) {
        how += Field(a, "exit_status").is_null()
                   ? ", no exit status"
                   : fmt::format(", exit status {}", Text(a, "exit_status"));
      }
      out << fmt::format("  #{} {}{}: {} -> {}{}  token {} node {}\n", Text(a, "number"),
                         step.empty() ? "" : "step " + step + " ", how, Text(a, "started_at"),
                         ended.empty() ? "(running)" : ended,
                         Field(a, "duration_seconds").is_null()
                             ? ""
                             : fmt::format(" ({}s)", Text(a, "duration_seconds")),
                         Text(a, "fencing_token"), Text(a, "node"));
      if (!log.empty()) out << "     log " << log << "\n";
      // The tail's last lines: the step's last words and how it ended.
      const std::string tail = Text(a, "output_tail");
      std::vector<std::string> lines;
      for (std::size_t begin = 0; begin < tail.size();) {
        std::size_t nl = tail.find('\n', begin);
        if (nl == std::string::npos) nl = tail.size();
        if (nl > begin) lines.push_back(tail.substr(begin, nl - begin));
        begin = nl + 1;
      }
      constexpr std::size_t kTailLines = 8;
      for (std::size_t i = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
           i < lines.size(); ++i) {
        out << "     | " << lines[i] << "\n";
      }
    }
  }
  if (const auto& effects = Field(run, "effects"); !effects.empty()) {
    out << "\neffects:\n";
    for (const auto& e : effects) {
      const std::string settled =
          !Field(e, "settled_attempt").is_null()
              ? fmt::format(" settled by attempt #{}", Text(e, "settled_attempt"))
          : !Text(e, "settled_by").empty() ? " resolved by " + Text(e, "settled_by")
                                           : "";
      const std::string fingerprint = Text(e, "fingerprint");
      out << fmt::format(
          "  {:<20} {}{} started by {}attempt #{}{}{}{}\n", Text(e, "key"), Text(e, "state"),
          Field(e, "in_doubt") == true ? " (in doubt)" : "",
          Integer(e, "run_id") == id ? "" : fmt::format("run {} ", Text(e, "run_id")),
          Text(e, "started_attempt"), settled,
          Field(e, "exit_status").is_null() ? "" : fmt::format(" exit {}", Text(e, "exit_status")),
          fingerprint.empty() ? "" : " fingerprint " + fingerprint);
    }
  }
  out << "\nevents:\n";
  PrintEventTable(Field(run, "events"), out);
}

}  // namespace

int RunRuns(const RunsArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  store::RunQuery q;
  if (args.run) {
    if (args.job || args.date || args.state || args.partition || args.limit) {
      return UsageError(err, "runs",
                   "--run ID shows one run; do not combine it with --job, --date, --state, "
                   "--partition or --limit");
    }
    if (*args.run <= 0) return UsageError(err, "runs", fmt::format("--run {}: run ids are positive", *args.run));
  } else {
    if (args.state) {
      auto state = ledger::ParseRunState(*args.state);
      if (!state) {
        return UsageError(err, "runs", fmt::format("--state \"{}\" is not a run state; use one of {}",
                                      *args.state, kAllStates));
      }
      q.state = *state;
    }
    if (args.date) {
      if (!ParseBusinessDate(*args.date)) {
        return UsageError(err, "runs", NotADate("--date", *args.date));
      }
      q.business_date = *args.date;
    }
    const int64_t limit = args.limit.value_or(kRunsDefaultLimit);
    if (limit < 1 || limit > kRunsMaxLimit) {
      return UsageError(err, "runs",
                   fmt::format("--limit {} is out of range; use 1 to {}", limit, kRunsMaxLimit));
    }
    if (args.partition && !config::IsValidPartitionId(*args.partition)) {
      return UsageError(err, "runs", fmt::format("--partition \"{}\" is not a partition id ({})",
                                    *args.partition, config::kPartitionIdRule));
    }
    q.limit = static_cast<int>(limit);
    q.job = args.job;
    q.partition = args.partition;
  }

  // The document to print: one run (RunDetailJson) or the runs (docs/cli.md).
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("runs", {args.config_path, args.server, {}}, clock, &ledger, err,
                          StoreAccess::kRead);
      rc != kExitOk) {
    return rc;
  }
  Result<ordered_json> doc = args.run ? ledger->Run(*args.run) : ledger->Runs(q, args.json);
  if (!doc.ok()) return Refused("runs", doc.status(), err);
  if (args.json) {
    out << ops::Dump(*doc, 2) << "\n";
    return kExitOk;
  }
  if (args.run) {
    PrintRun(*doc, out);
    return kExitOk;
  }
  // The jobs' zones, for their wall time beside UTC; without them, UTC.
  auto jobs = ledger->Jobs();
  LocalTimes local(jobs.ok() ? *jobs : ordered_json::object());
  TextTable table(
      {"ID", "RUN_KEY", "STATE", "REASON", "SCHEDULED_AT", "BUSINESS_DATE", "ATTEMPTS"});
  for (const auto& r : Field(*doc, "runs")) {
    table.AddRow({Text(r, "id"), Text(r, "run_key"), Text(r, "state"), Text(r, "reason"),
                  local.Of(Text(r, "job"), Text(r, "scheduled_at")), Text(r, "business_date"),
                  Text(r, "attempts")});
  }
  table.Print(out);
  return kExitOk;
}

}  // namespace cronledger::cli
