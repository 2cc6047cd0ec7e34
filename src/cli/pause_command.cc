#include "cli/pause_command.h"

#include <fmt/format.h>

#include "ops/operator_actions.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/remote_ledger.h"

namespace cronledger::cli {
namespace {

bool IsBlank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

int RunPause(const PauseArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const std::string command = args.pause ? "pause" : "resume";
  const auto usage = [&](const std::string& message) {
    err << "cronledger " << command << ": " << message << "\n";
    return kExitUsage;
  };
  if (args.job.has_value() == args.all) {
    return usage("give exactly one of --job JOB or --all");
  }
  if (args.job && args.job->empty()) return usage("--job needs a job name");
  if (!args.reason || IsBlank(*args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  std::string actor = args.by.value_or(DefaultActor());
  if (IsBlank(actor)) return usage("--by needs a name");

  const auto failed = [&](const Status& s) {
    err << "cronledger " << command << ": " << s.message() << "\n";
    return ExitCodeFor(s);
  };

  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect(command, args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    nlohmann::ordered_json body;
    if (args.job) {
      body["job"] = *args.job;
    } else {
      body["all"] = true;
    }
    body["reason"] = *args.reason;
    body["by"] = actor;
    auto answer = remote->Post(args.pause ? "/v1/pause" : "/v1/resume", body,
                               StatusCode::kInvalidArgument);
    if (!answer.ok()) return failed(answer.status());
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport(command, args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    const config::JobConfig* job = args.job ? config.FindJob(*args.job) : nullptr;
    if (args.job && job == nullptr) {
      return usage(fmt::format("no job \"{}\" in {}", *args.job, config.path));
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport(command, config, &store, err); rc != kExitOk) return rc;
    if (Status s = ops::SetPaused(*store, job, args.pause, actor, *args.reason,
                                  store::ToInstant(clock.Now()));
        !s.ok()) {
      return failed(s);
    }
  }

  out << (args.pause ? "paused " : "resumed ")
      << (args.job ? "job " + *args.job : std::string("everything")) << "\n";
  return kExitOk;
}

}  // namespace cronledger::cli
