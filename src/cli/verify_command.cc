#include "cli/verify_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

int Usage(std::ostream& err, const std::string& message) {
  err << "cronledger verify: " << message << "\n";
  return kExitUsage;
}

// A timestamp field of the report, "-" when null.
std::string Text(const ordered_json& value) {
  return value.is_null() ? "-" : value.get<std::string>();
}

}  // namespace

int RunVerify(const VerifyArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto date = ParseBusinessDate(args.date);
  if (!date) return Usage(err, "--date \"" + args.date + "\" is not a date (YYYY-MM-DD)");
  JobCommand ctx;
  if (int rc = OpenJobCommand("verify", args.config_path, args.job, &ctx, err); rc != kExitOk) {
    return rc;
  }
  auto report =
      api::VerifyJson(*ctx.store, *ctx.job, args.date, *date, store::ToInstant(clock.Now()));
  if (!report.ok()) {
    err << "cronledger verify: " << report.status().message() << "\n";
    return ExitCodeFor(report.status());
  }
  const ordered_json& r = *report;
  const bool complete = r["complete"].get<bool>();
  if (args.json) {
    out << api::Dump(r, 2) << "\n";
  } else {
    const int expected = r["expected"].get<int>();
    out << fmt::format("{} {}: {}\n", ctx.job->name, args.date,
                       complete        ? "complete"
                       : expected == 0 ? "INCOMPLETE (nothing is expected on this date)"
                                       : "INCOMPLETE");
    out << fmt::format("  expected {}, succeeded {}, waived {}, attempts {}\n", expected,
                       r["succeeded"].get<int>(), r["waived"].get<int>(),
                       r["attempts"].get<int>());
    out << fmt::format("  first scheduled {}, last completed {}\n",
                       Text(r["first_scheduled_at"]), Text(r["last_completed_at"]));
    for (const auto& [name, states] : r["steps"].items()) {
      std::string counts;
      for (const auto& [state, n] : states.items()) {
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n.get<int>(), state);
      }
      out << fmt::format("  step {}: {}\n", name, counts);
    }
    for (const auto& rerun : r["reruns"]) {
      out << fmt::format("  {} {} by {} at {}: {}\n", rerun["type"].get<std::string>(),
                         rerun["run_key"].get<std::string>(), rerun["actor"].get<std::string>(),
                         rerun["at"].get<std::string>(), Text(rerun["reason"]));
    }
    for (const auto& m : r["missing"]) {
      out << fmt::format("  missing {} ({})\n", m["run_key"].get<std::string>(),
                         m["cause"].get<std::string>());
    }
  }
  return complete ? kExitOk : kExitFound;
}

}  // namespace cronledger::cli
