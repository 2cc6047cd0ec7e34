#include "cli/gaps_command.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"
#include "cronledger/schedule.h"

namespace cronledger::cli {
namespace {

using std::chrono::sys_days;
using std::chrono::year_month_day;

}  // namespace

int RunGaps(const GapsArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  std::optional<year_month_day> from, to;
  if (args.from && !(from = ParseBusinessDate(*args.from))) {
    return UsageError(err, "gaps", NotADate("--from", *args.from));
  }
  if (args.to && !(to = ParseBusinessDate(*args.to))) {
    return UsageError(err, "gaps", NotADate("--to", *args.to));
  }
  if (from && to && sys_days(*from) > sys_days(*to)) {
    return UsageError(err, "gaps", "--from " + *args.from + " is after --to " + *args.to);
  }
  // Gaps are printed as they are found, never all held: a ledger missing a
  // whole window can have millions (the server's answer is one document).
  std::size_t total = 0;
  std::size_t unwaived = 0;
  std::map<std::string, int> by_cause;
  TextTable table({"RUN_KEY", "BUSINESS_DATE", "SCHEDULED_AT", "CAUSE", "RUN_ID"});
  constexpr std::size_t kTableBlock = 1000;  // rows aligned together
  std::string line;
  LocalTimes* local = nullptr;  // set before the first row
  // One item of the gaps document (GapJson; docs/cli.md).
  const auto print = [&](const nlohmann::ordered_json& g) {
    const bool waived = Field(g, "waived") == true;
    const std::string cause = Text(g, "cause");
    if (args.json) {
      // The items of {"gaps": [...]}, as ops::Dump with indent 2 lays out the
      // whole object.
      line = total == 0 ? "{\n  \"gaps\": [\n    " : ",\n    ";
      for (const char c : ops::Dump(g, 2)) {
        line += c;
        if (c == '\n') line += "    ";
      }
      out << line;
    } else {
      table.AddRow({Text(g, "run_key"), Text(g, "business_date"),
                    local->Of(Text(g, "job"), Text(g, "scheduled_at")),
                    waived ? cause + " (waived)" : cause, Text(g, "run_id")});
      if (table.pending_rows() >= kTableBlock) table.Flush(out);
    }
    ++total;
    if (!waived) ++unwaived;
    ++by_cause[cause];
  };

  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("gaps", {args.config_path, args.server, args.job}, clock, &ledger, err,
                          StoreAccess::kRead);
      rc != kExitOk) {
    return rc;
  }
  // The jobs' zones, for their wall time beside UTC in the table.
  std::optional<LocalTimes> zones;
  if (!args.json) {
    auto jobs = ledger->Jobs();
    zones.emplace(jobs.ok() ? *jobs : nlohmann::ordered_json::object());
  }
  local = zones ? &*zones : nullptr;
  ops::GapsQuery query;
  query.job = args.job;
  query.from = from;
  query.to = to;
  query.include_waived = args.include_waived;
  const Status s = ledger->Gaps(query, [&](const nlohmann::ordered_json& g) {
    print(g);
    return Status::Ok();
  });
  if (!s.ok()) {
    out.flush();
    err << "cronledger gaps: " << s.message() << "\n";
    return ExitCodeFor(s);
  }

  if (args.json) {
    out << (total == 0 ? "{\n  \"gaps\": []\n}\n" : "\n  ]\n}\n");
  } else if (total == 0) {
    out << "no gaps\n";
  } else {
    table.Flush(out);
    std::string causes;
    for (const auto& [cause, n] : by_cause) {
      causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", n, cause);
    }
    out << fmt::format("{} gap(s), {} waived: {}\n", unwaived, total - unwaived, causes);
  }
  return unwaived == 0 ? kExitOk : kExitFound;
}

}  // namespace cronledger::cli
