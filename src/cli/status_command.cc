#include "cli/status_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

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
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("status", {args.config_path, args.server, {}}, clock, &ledger, err,
                          StoreAccess::kRead);
      rc != kExitOk) {
    return rc;
  }
  auto answer = ledger->Jobs();
  if (!answer.ok()) return Refused("status", answer.status(), err);
  const ordered_json& doc = *answer;

  if (args.json) {
    out << ops::Dump(doc, 2) << "\n";
    return kExitOk;
  }
  TextTable table({"JOB", "STATE", "BUSINESS_DATE", "EXPECTED", "SUCCEEDED", "FAILED", "UNKNOWN",
                   "WAIVED", "IN_PROGRESS", "MISSING", "LAG", "LAST_SUCCESS", "NEXT_AT"});
  for (const auto& s : Field(doc, "jobs")) {
    // Times in UTC with the job's own wall time beside them.
    const std::string zone = Text(s, "timezone");
    std::string last = Text(s, "last_success_at");
    if (!last.empty()) {
      last = WithLocalTime(last, zone) + " for " + Text(s, "last_success_business_date");
    }
    // Before serve's first plan of it there is no watermark.
    const std::string state = Text(s, "state");
    table.AddRow({Text(s, "name"),
                  Field(s, "planned_through").is_null() ? state + " (not yet planned)" : state,
                  Text(s, "business_date"), Text(s, "expected"), Text(s, "succeeded"),
                  Text(s, "failed"), Text(s, "unknown"), Text(s, "waived"), Text(s, "in_progress"),
                  Text(s, "missing"), FormatLag(Integer(s, "lag_seconds")), last,
                  WithLocalTime(Text(s, "next_at"), zone)});
  }
  table.Print(out);
  // Which `serve` nodes share this ledger, and which are up.
  if (doc.contains("nodes") && !Field(doc, "nodes").empty()) {
    TextTable nodes(
        {"NODE", "ALIVE", "LAST_SEEN", "RUNNING", "ROLES", "VERSION", "LISTEN", "STARTED"});
    for (const auto& n : Field(doc, "nodes")) {
      std::string roles;
      for (const auto& role : Field(n, "roles")) {
        roles += (roles.empty() ? "" : ",") + role.get<std::string>();
      }
      nodes.AddRow({Text(n, "node"), Field(n, "alive").get<bool>() ? "yes" : "no",
                    Text(n, "last_seen_at"), Text(n, "running"), roles.empty() ? "-" : roles,
                    Text(n, "version"), Text(n, "listen"), Text(n, "started_at")});
    }
    out << "\n";
    nodes.Print(out);
  }
  return kExitOk;
}

}  // namespace cronledger::cli
