#include "cli/resolve_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/remote_ledger.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

constexpr const char* kEffectAs = "committed or failed";
constexpr const char* kRunAs = "succeeded, failed or retry";

// The run as it is after the resolution (RunJson).
Result<nlohmann::ordered_json> ResolvedRun(store::Store& store, int64_t run_id) {
  auto run = store.RunGet(run_id);
  if (!run.ok()) return run.status();
  auto steps = store.StepList(run_id);
  if (!steps.ok()) return steps.status();
  return RunJson(*run, *steps);
}

// What the resolution did, as told whether the run came from the store or
// from the server.
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
  if (!args.reason || args.reason->find_first_not_of(" \t\r\n") == std::string::npos) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  Resolved resolved;
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("resolve", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    nlohmann::ordered_json body;
    body["as"] = *args.as;
    if (args.effect) body["effect"] = *args.effect;
    body["reason"] = *args.reason;
    body["by"] = actor;
    auto answer = remote->Post(fmt::format("/v1/runs/{}/resolve", args.run_id), body);
    if (!answer.ok()) {
      err << "cronledger resolve: " << answer.status().message() << "\n";
      return ExitCodeFor(answer.status());
    }
    resolved.run = std::move(*answer);
    // The answer is the run, plus what is still in doubt.
    for (const auto& key : Field(resolved.run, "still_in_doubt")) {
      if (key.is_string()) resolved.still_in_doubt.push_back(key.get<std::string>());
    }
    resolved.run.erase("still_in_doubt");
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport("resolve", args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport("resolve", config, &store, err, StoreAccess::kExisting);
        rc != kExitOk) {
      return rc;
    }
    const store::Instant now = store::ToInstant(clock.Now());
    if (effect_as) {
      auto r =
          store->EffectResolve({args.run_id, *args.effect, *effect_as, actor, *args.reason, now});
      if (!r.ok()) {
        err << "cronledger resolve: " << r.status().message() << "\n";
        return ExitCodeFor(r.status());
      }
      resolved.still_in_doubt = r->still_in_doubt;
    } else if (Status s = store->RunResolve({args.run_id, *run_as, actor, *args.reason, now});
               !s.ok()) {
      err << "cronledger resolve: " << s.message() << "\n";
      return ExitCodeFor(s);
    }
    if (args.json) {
      auto run = ResolvedRun(*store, args.run_id);
      if (!run.ok()) {
        err << "cronledger resolve: " << run.status().message() << "\n";
        return ExitCodeFor(run.status());
      }
      resolved.run = std::move(*run);
    }
  }

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
