#include "cli/check_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <variant>

#include "ops/config_impact_json.h"
#include "ops/json_shapes.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "config/config.h"
#include "cronledger/schedule.h"
#include "engine/config_impact.h"

namespace cronledger::cli {
namespace {

std::string Count(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "2 jobs, 3 partitions, 3 steps". Partitions counts the static lists and
// the implicit "default"; a job whose partitions come from a command is
// counted apart, since its set is known only when the command runs:
// "2 jobs, 2 partitions + partitions from 1 command, 3 steps".
std::string Summary(const config::Config& config) {
  std::size_t partitions = 0;
  std::size_t commands = 0;
  std::size_t steps = 0;
  for (const auto& job : config.jobs) {
    if (!job.partitions_command.empty()) {
      ++commands;
    } else {
      partitions += job.partitions.empty() ? 1 : job.partitions.size();
    }
    steps += job.steps.size();
  }
  std::string out = Count(config.jobs.size(), "job") + ", ";
  if (partitions > 0 || commands == 0) out += Count(partitions, "partition");
  if (partitions > 0 && commands > 0) out += " + ";
  if (commands > 0) out += "partitions from " + Count(commands, "command");
  return out + ", " + Count(steps, "step");
}

// Long lists stop here in text; --json has them all.
constexpr std::size_t kShown = 10;

// "run 12 pending", and why it matters when `why` is given; "" for no run.
std::string RunNote(const std::optional<int64_t>& id, const std::optional<ledger::RunState>& state,
                    const char* why) {
  if (!id) return "";
  std::string note = fmt::format("run {} {}", *id, state ? ledger::Name(*state) : "");
  if (why != nullptr) note += std::string(": ") + why;
  return note;
}

// Up to kShown rows, indented under their heading, columns aligned.
template <typename T, typename F>
void PrintList(const std::vector<T>& items, std::ostream& out, F row) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) rows.push_back(row(items[i]));
  std::vector<std::size_t> widths;
  for (const auto& r : rows) {
    widths.resize(std::max(widths.size(), r.size()), 0);
    for (std::size_t c = 0; c < r.size(); ++c) widths[c] = std::max(widths[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line = "    ";
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line.append(widths[c] - r[c].size() + 2, ' ');
    }
    while (line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  if (items.size() > kShown) {
    out << "    ... and " << items.size() - kShown << " more (--json lists them all)\n";
  }
}

void PrintJob(const engine::JobImpact& j, std::ostream& out) {
  using engine::JobChange;
  if (j.change == JobChange::kUnchanged) {
    out << j.job << ": no change\n";
    return;
  }
  // `why` is said of a key whose run is planned, or (`any_run`) has any run.
  const auto key_row = [&](const char* why, bool any_run) {
    return [&j, why, any_run](const engine::ImpactKey& k) {
      return std::vector<std::string>{
          j.job + "/" + k.partition + "/" + k.period, FormatUtc(k.scheduled_at),
          RunNote(k.run_id, k.run_state, k.planned || any_run ? why : nullptr)};
    };
  };
  if (j.change == JobChange::kRemoved) {
    // serve neither releases nor claims the runs of a job it is not given.
    if (j.orphaned_runs == 0) {
      out << j.job << ": in the ledger, not in the configuration; nothing planned ahead\n";
      return;
    }
    out << j.job << ": not in the configuration: serve would leave its " << j.orphaned_runs
        << " planned run(s) pending, never run\n";
    PrintList(j.no_longer_expected, out, key_row("orphaned", false));
    return;
  }
  if (j.change == JobChange::kNew) {
    out << j.job << ": new to the ledger\n";
  } else {
    std::string what;
    for (const auto& c : j.settings) {
      what += fmt::format("{}{} {} -> {}", what.empty() ? "" : ", ", c.key, c.from, c.to);
    }
    if (!j.partitions_added.empty()) {
      what += fmt::format("{}partitions added: {}", what.empty() ? "" : "; ",
                          fmt::join(j.partitions_added, ", "));
    }
    if (!j.partitions_removed.empty()) {
      what += fmt::format("{}partitions removed: {}", what.empty() ? "" : "; ",
                          fmt::join(j.partitions_removed, ", "));
    }
    out << j.job << ": changed: " << what << "\n";
    out << "  serve would record it from " << FormatUtc(*j.effective_from)
        << "; runs planned before then keep the old definition\n";
  }
  if (j.partitions_from_command) {
    out << "  partitions come from a command, not run by check: "
        << (j.change == JobChange::kNew ? "shown as \"*\"" : "the ledger's current set is assumed")
        << "\n";
  }
  out << "  compared occurrences " << FormatUtc(j.window_from) << " .. " << FormatUtc(j.window_to)
      << "\n";
  if (!j.rekeyed.empty()) {
    out << "  re-keyed: " << j.rekeyed.size() << " occurrence(s), " << j.rekeyed_runs
        << " planned run(s)\n";
    PrintList(j.rekeyed, out, [&j](const engine::RekeyedOccurrence& r) {
      const std::string prefix = j.job + "/" + r.partition + "/";
      return std::vector<std::string>{
          FormatUtc(r.scheduled_at), prefix + r.from_period + " -> " + prefix + r.to_period,
          RunNote(r.run_id, r.run_state, r.planned ? "would do the old key" : nullptr)};
    });
  }
  if (!j.newly_expected.empty()) {
    out << "  newly expected: " << j.newly_expected.size() << " key(s)\n";
    PrintList(j.newly_expected, out,
              key_row("already in the ledger: the new occurrence would be deduplicated", true));
  }
  if (!j.no_longer_expected.empty()) {
    out << "  no longer expected: " << j.no_longer_expected.size() << " key(s), "
        << j.orphaned_runs << " orphaned planned run(s)\n";
    PrintList(j.no_longer_expected, out, key_row("orphaned", false));
  }
  if (j.rekeyed.empty() && j.newly_expected.empty() && j.no_longer_expected.empty()) {
    out << "  no run key changes in the window\n";
  }
}

// Valid, yet probably not what was meant: a start_date older than the
// backfill horizon leaves its oldest keys out of the scanner's and the
// dashboard's reach (they are still expected: `gaps --from`, `verify` and
// `backfill --from` reach them). On stderr, after the "ok" line.
void PrintWarnings(const config::Config& config, Clock::TimePoint now, std::ostream& err) {
  for (const auto& job : config.jobs) {
    if (!job.start_date) continue;
    const std::chrono::year_month_day reach{
        std::chrono::floor<std::chrono::days>(now - job.backfill.horizon)};
    if (*job.start_date >= reach) continue;
    err << fmt::format(
        "{}:{}: warning: job[{}].start_date: {} is older than backfill.horizon ({}) reaches "
        "(back to {}): the scanner, the dashboard and the default `gaps` window do not look "
        "there; `cronledger backfill --job {} --from {} --to ...` still queues those keys, "
        "or raise backfill.horizon\n",
        config.path, job.line, job.name, FormatDate(*job.start_date),
        config::FormatDuration(job.backfill.horizon), FormatDate(reach), job.name,
        FormatDate(*job.start_date));
  }
}

int CheckAgainstStore(const config::Config& config, const CheckArgs& args, Clock& clock,
                      std::ostream& out, std::ostream& err) {
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("check", config, &store, err, StoreAccess::kRead); rc != kExitOk) {
    return rc;
  }
  engine::ConfigImpactParams p;
  p.now = store::ToInstant(clock.Now());
  auto impact = engine::AnalyzeConfigImpact(config, *store, p);
  if (!impact.ok()) return Refused("check", impact.status(), err);
  const int orphaned = impact->OrphanedRuns();
  const int rekeyed = impact->RekeyedRuns();
  if (args.json) {
    out << ops::Dump(ops::ConfigImpactJson(*impact), 2) << "\n";
  } else {
    out << config.path << ": ok (" << Summary(config) << ")\n";
    PrintWarnings(config, clock.Now(), err);
    for (const auto& j : impact->jobs) PrintJob(j, out);
    if (impact->Unchanged()) {
      out << "no change\n";
    } else if (orphaned + rekeyed > 0) {
      out << fmt::format(
          "{} planned run(s) orphaned, {} re-keyed: they would still run as planned, under the "
          "old definition\n",
          orphaned, rekeyed);
    } else {
      out << "no planned run orphaned or re-keyed\n";
    }
  }
  return orphaned + rekeyed > 0 ? kExitFound : kExitOk;
}

}  // namespace

int RunCheck(const CheckArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  auto loaded = config::LoadConfig(args.config_path);
  if (const auto* errors = std::get_if<config::ConfigErrors>(&loaded)) {
    err << errors->ToString();
    return kExitUsage;
  }
  const auto& config = std::get<config::Config>(loaded);
  if (args.against_store) return CheckAgainstStore(config, args, clock, out, err);
  out << config.path << ": ok (" << Summary(config) << ")\n";
  PrintWarnings(config, clock.Now(), err);
  return kExitOk;
}

}  // namespace cronledger::cli
