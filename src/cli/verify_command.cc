#include "cli/verify_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

// A field of the report, "-" when null.
std::string Dash(const ordered_json& object, std::string_view key) {
  const std::string text = Text(object, key);
  return text.empty() ? "-" : text;
}

}  // namespace

int RunVerify(const VerifyArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto date = ParseBusinessDate(args.date);
  if (!date) return UsageError(err, "verify", NotADate("--date", args.date));
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("verify", {args.config_path, args.server, args.job}, clock, &ledger, err,
                          StoreAccess::kRead);
      rc != kExitOk) {
    return rc;
  }
  auto report = ledger->Verify({args.job, args.date, *date});
  if (!report.ok()) return Refused("verify", report.status(), err);
  const ordered_json& r = *report;
  const bool complete = Field(r, "complete") == true;
  if (args.json) {
    out << ops::Dump(r, 2) << "\n";
  } else {
    const int64_t expected = Integer(r, "expected");
    out << fmt::format("{} {}: {}\n", args.job, args.date,
                       complete        ? "complete"
                       : expected == 0 ? "INCOMPLETE (nothing is expected on this date)"
                                       : "INCOMPLETE");
    out << fmt::format("  expected {}, succeeded {}, waived {}, attempts {}\n", expected,
                       Integer(r, "succeeded"), Integer(r, "waived"), Integer(r, "attempts"));
    out << fmt::format("  first scheduled {}, last completed {}\n", Dash(r, "first_scheduled_at"),
                       Dash(r, "last_completed_at"));
    for (const auto& [name, states] : Field(r, "steps").items()) {
      std::string counts;
      for (const auto& [state, n] : states.items()) {
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", ops::Dump(n), state);
      }
      out << fmt::format("  step {}: {}\n", name, counts);
    }
    for (const auto& rerun : Field(r, "reruns")) {
      const std::string for_whom = Text(rerun, "on_behalf_of");
      out << fmt::format("  {} {} by {}{} at {}: {}\n", Text(rerun, "type"), Text(rerun, "run_key"),
                         Text(rerun, "actor"), for_whom.empty() ? "" : " for " + for_whom,
                         Text(rerun, "at"), Dash(rerun, "reason"));
    }
    // Keys not due yet are one line: a minutely job's today would otherwise
    // list every minute left in the day. --json lists each.
    int64_t not_due = 0;
    std::string first_not_due;
    for (const auto& m : Field(r, "missing")) {
      if (Text(m, "cause") == "not_due") {
        if (not_due++ == 0) first_not_due = Text(m, "run_key");
        continue;
      }
      out << fmt::format("  missing {} ({})\n", Text(m, "run_key"), Text(m, "cause"));
    }
    if (not_due > 0) {
      out << fmt::format("  not due yet: {} run key(s), the first {}\n", not_due, first_not_due);
    }
  }
  return complete ? kExitOk : kExitFound;
}

}  // namespace cronledger::cli
