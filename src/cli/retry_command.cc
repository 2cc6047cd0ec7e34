#include "cli/retry_command.h"

#include <fmt/format.h>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/remote_ledger.h"

namespace cronledger::cli {

int RunRetry(const RetryArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger retry: " << message << "\n";
    return kExitUsage;
  };
  if (args.run_id <= 0) return usage(fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  if (!args.reason || args.reason->find_first_not_of(" \t\r\n") == std::string::npos) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  Status s = Status::Ok();
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("retry", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    s = remote
            ->Post(fmt::format("/v1/runs/{}/retry", args.run_id),
                   {{"reason", *args.reason}, {"by", actor}})
            .status();
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport("retry", args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport("retry", config, &store, err, StoreAccess::kExisting);
        rc != kExitOk) {
      return rc;
    }
    s = store->RunRetry({args.run_id, actor, *args.reason, store::ToInstant(clock.Now())});
  }
  if (!s.ok()) {
    err << "cronledger retry: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  out << fmt::format("run {} queued for a new attempt\n", args.run_id);
  return kExitOk;
}

}  // namespace cronledger::cli
