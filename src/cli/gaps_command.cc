#include "cli/gaps_command.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"

namespace cronledger::cli {
namespace {

using std::chrono::sys_days;
using std::chrono::year_month_day;

int Usage(std::ostream& err, const std::string& message) {
  err << "cronledger gaps: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int RunGaps(const GapsArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  std::optional<year_month_day> from, to;
  if (args.from && !(from = ParseBusinessDate(*args.from))) {
    return Usage(err, "--from \"" + *args.from + "\" is not a date (YYYY-MM-DD)");
  }
  if (args.to && !(to = ParseBusinessDate(*args.to))) {
    return Usage(err, "--to \"" + *args.to + "\" is not a date (YYYY-MM-DD)");
  }
  if (from && to && sys_days(*from) > sys_days(*to)) {
    return Usage(err, "--from " + *args.from + " is after --to " + *args.to);
  }
  config::Config config;
  if (int rc = LoadConfigOrReport("gaps", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  std::vector<const config::JobConfig*> jobs;
  for (const auto& j : config.jobs) {
    if (!args.job || j.name == *args.job) jobs.push_back(&j);
  }
  if (args.job && jobs.empty()) {
    return Usage(err, "no job named \"" + *args.job + "\" in " + args.config_path);
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("gaps", config, &store, err, StoreAccess::kExisting);
      rc != kExitOk) {
    return rc;
  }

  api::GapQuery query;
  query.jobs = std::move(jobs);
  query.from = from;
  query.to = to;
  query.include_waived = args.include_waived;
  auto scanned = api::ScanGaps(*store, query, store::ToInstant(clock.Now()));
  if (!scanned.ok()) {
    err << "cronledger gaps: " << scanned.status().message() << "\n";
    return ExitCodeFor(scanned.status());
  }
  const std::vector<engine::Gap>& gaps = *scanned;

  std::size_t unwaived = 0;
  std::map<std::string, int> by_cause;
  for (const auto& g : gaps) {
    if (!g.waived) ++unwaived;
    ++by_cause[g.cause];
  }
  if (args.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& g : gaps) list.push_back(api::GapJson(g));
    out << api::Dump({{"gaps", list}}, 2) << "\n";
  } else if (gaps.empty()) {
    out << "no gaps\n";
  } else {
    TextTable table({"RUN_KEY", "BUSINESS_DATE", "SCHEDULED_AT", "CAUSE", "RUN_ID"});
    for (const auto& g : gaps) {
      table.AddRow({g.RunKey(), g.business_date, FormatUtc(g.scheduled_at),
                    g.waived ? g.cause + " (waived)" : g.cause,
                    g.run_id ? std::to_string(*g.run_id) : ""});
    }
    table.Print(out);
    std::string causes;
    for (const auto& [cause, n] : by_cause) {
      causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", n, cause);
    }
    out << fmt::format("{} gap(s), {} waived: {}\n", unwaived, gaps.size() - unwaived, causes);
  }
  return unwaived == 0 ? kExitOk : kExitFound;
}

}  // namespace cronledger::cli
