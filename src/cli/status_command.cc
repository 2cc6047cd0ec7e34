#include "cli/status_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "engine/status_report.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

// 0s, 45s, 12m05s, 3h07m, 2d04h.
std::string FormatLag(int64_t seconds) {
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  if (seconds < 86400) return fmt::format("{}h{:02}m", seconds / 3600, seconds % 3600 / 60);
  return fmt::format("{}d{:02}h", seconds / 86400, seconds % 86400 / 3600);
}

}  // namespace

int RunStatus(const StatusArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  config::Config config;
  if (int rc = LoadConfigOrReport("status", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("status", config, &store, err, StoreAccess::kExisting); rc != kExitOk) return rc;
  auto report = engine::BuildStatus(config, *store, clock.Now());
  if (!report.ok()) {
    err << "cronledger status: " << report.status().message() << "\n";
    return ExitCodeFor(report.status()) == kExitUsage ? kExitUsage : kExitUnavailable;
  }

  if (args.json) {
    ordered_json jobs = ordered_json::array();
    for (const auto& s : report->jobs) jobs.push_back(api::JobStatusJson(s));
    ordered_json doc;
    doc["jobs"] = std::move(jobs);
    out << api::Dump(doc, 2) << "\n";
    return kExitOk;
  }

  TextTable table({"JOB", "STATE", "BUSINESS_DATE", "EXPECTED", "SUCCEEDED", "FAILED", "UNKNOWN",
                   "WAIVED", "IN_PROGRESS", "MISSING", "LAG", "LAST_SUCCESS", "NEXT_AT"});
  for (const auto& s : report->jobs) {
    std::string last = s.last_success_at;
    if (!last.empty()) last += " (" + s.last_success_business_date + ")";
    table.AddRow({s.name, s.in_ledger ? s.state : s.state + " (not yet planned)", s.business_date,
                  std::to_string(s.expected), std::to_string(s.succeeded), std::to_string(s.failed),
                  std::to_string(s.unknown), std::to_string(s.waived),
                  std::to_string(s.in_progress), std::to_string(s.missing),
                  FormatLag(s.lag_seconds), last, s.next_at});
  }
  table.Print(out);
  return kExitOk;
}

}  // namespace cronledger::cli
