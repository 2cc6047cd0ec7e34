#include "cli/resolve_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

constexpr const char* kEffectAs = "committed or failed";
constexpr const char* kRunAs = "succeeded, failed or retry";

// What the resolution did.
struct Resolved {
  std::vector<std::string> still_in_doubt;  // with --effect
  nlohmann::ordered_json run;               // RunJson, after it
};

}  // namespace

int RunResolve(const ResolveArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger resolve: " << message << "\n";
    return kExitUsage;
  };
  if (args.run_id <= 0) return usage(fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  if (args.effect && args.effect->empty()) {
    return usage("--effect KEY: the key is empty; give the effect's idempotency key");
  }
  std::optional<ledger::EffectState> effect_as;
  std::optional<store::RunResolution> run_as;
  if (!args.as) {
    return usage(args.effect
                     ? fmt::format("--as is required: with --effect, use --as {}", kEffectAs)
                     : fmt::format("--as is required: use --as {} (or --effect KEY --as {} "
                                   "for an effect in doubt)",
                                   kRunAs, kEffectAs));
  }
  if (args.effect) {
    effect_as = ledger::ParseEffectState(*args.as);
    if (!effect_as || *effect_as == ledger::EffectState::kStarted) {
      return usage(fmt::format("--as \"{}\" is not allowed with --effect; use {}", *args.as,
                               kEffectAs));
    }
  } else {
    run_as = store::ParseRunResolution(*args.as);
    if (!run_as) {
      return usage(fmt::format("--as \"{}\" is not allowed without --effect; use {} (or "
                               "--effect KEY --as {} for an effect in doubt)",
                               *args.as, kRunAs, kEffectAs));
    }
  }
  auto acting = OpenLedgerToAct("resolve", {args.config_path, args.server, {}}, args.reason,
                                args.by, clock, err);
  if (!acting.ledger) return acting.exit_code;
  auto answer = acting.ledger->ActOnRun({args.run_id, ops::RunActionKind::kResolve, args.effect,
                                         effect_as, run_as, std::move(acting.who)});
  if (!answer.ok()) return Refused("resolve", answer.status(), err);
  // The answer is the run, plus what is still in doubt.
  Resolved resolved;
  resolved.run = std::move(*answer);
  for (const auto& key : Field(resolved.run, "still_in_doubt")) {
    if (key.is_string()) resolved.still_in_doubt.push_back(key.get<std::string>());
  }
  resolved.run.erase("still_in_doubt");

  std::string line;
  if (effect_as && resolved.still_in_doubt.empty()) {
    line = fmt::format("effect \"{}\" of run {} resolved as {}; run {} queued for a new attempt",
                       *args.effect, args.run_id, ledger::Name(*effect_as), args.run_id);
  } else if (effect_as) {
    line = fmt::format("effect \"{}\" of run {} resolved as {}; run {} stays unknown",
                       *args.effect, args.run_id, ledger::Name(*effect_as), args.run_id);
    // Said on stderr too, so a --json caller learns what is left to do.
    err << fmt::format(
        "cronledger resolve: run {} stays unknown: {} still in doubt: {}; resolve {} with "
        "--effect KEY\n",
        args.run_id, resolved.still_in_doubt.size() == 1 ? "an effect is" : "effects are",
        fmt::join(resolved.still_in_doubt, ", "),
        resolved.still_in_doubt.size() == 1 ? "it" : "each");
  } else if (*run_as == store::RunResolution::kRetry) {
    line = fmt::format("run {} resolved: queued for a new attempt", args.run_id);
  } else {
    line = fmt::format("run {} resolved as {}", args.run_id, store::Name(*run_as));
  }
  if (args.json) {
    out << ops::Dump(resolved.run, 2) << "\n";
  } else {
    out << line << "\n";
  }
  return kExitOk;
}

}  // namespace cronledger::cli
