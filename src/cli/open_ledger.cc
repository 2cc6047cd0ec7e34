#include "cli/open_ledger.h"

#include <utility>

#include "cli/exit_codes.h"
#include "cli/remote_ledger.h"
#include "ops/actor_text.h"
#include "ops/local_ledger.h"

namespace cronledger::cli {
namespace {

// What a local ledger borrows, held where it never moves: the store was
// opened from this very config.
struct OpenedStore {
  config::Config config;
  std::unique_ptr<store::Store> store;
};

class OwningLocalLedger : public ops::LocalLedger {
 public:
  OwningLocalLedger(std::unique_ptr<OpenedStore> opened, Clock& clock)
      : ops::LocalLedger(opened->config, *opened->store, clock), opened_(std::move(opened)) {}

 private:
  std::unique_ptr<OpenedStore> opened_;
};

bool IsBlank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

std::string ActorProblem(const std::optional<std::string>& reason,
                         const std::optional<std::string>& by) {
  if (!reason || IsBlank(*reason)) {
    return "--reason TEXT is required: say why, it is recorded in the ledger";
  }
  if (IsBlank(by ? *by : DefaultActor())) return "--by needs a name";
  if (std::string problem = ops::ActorTextProblem(ops::ActorField::kReason, *reason);
      !problem.empty()) {
    return "--reason " + problem;
  }
  if (std::string problem = ops::ActorTextProblem(ops::ActorField::kBy, by ? *by : DefaultActor());
      !problem.empty()) {
    return "--by " + problem;
  }
  return "";
}

ActingLedger OpenLedgerToAct(const std::string& command, const LedgerTarget& target,
                             const std::optional<std::string>& reason,
                             const std::optional<std::string>& by, Clock& clock, std::ostream& err,
                             StoreAccess access) {
  ActingLedger out;
  if (std::string problem = ActorProblem(reason, by); !problem.empty()) {
    out.exit_code = UsageError(err, command, problem);
    return out;
  }
  out.exit_code = OpenLedger(command, target, clock, &out.ledger, err, access);
  // The OS user acts; --by is whom for (through --server the token acts,
  // and the OS user is sent as `by` when --by is not given).
  out.who = {DefaultActor(), *reason, by.value_or("")};
  return out;
}

int OpenLedger(const std::string& command, const LedgerTarget& target, Clock& clock,
               std::unique_ptr<ops::Ledger>* out, std::ostream& err, StoreAccess access) {
  if (!target.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect(command, target.server, target.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    *out = std::move(remote);
    return kExitOk;
  }
  auto opened = std::make_unique<OpenedStore>();
  if (int rc = LoadConfigOrReport(command, target.config_path, &opened->config, err);
      rc != kExitOk) {
    return rc;
  }
  if (target.configured_job && opened->config.FindJob(*target.configured_job) == nullptr) {
    return UsageError(err, command, ops::NoSuchJob(*target.configured_job, true));
  }
  if (int rc = OpenStoreOrReport(command, opened->config, &opened->store, err, access);
      rc != kExitOk) {
    return rc;
  }
  *out = std::make_unique<OwningLocalLedger>(std::move(opened), clock);
  return kExitOk;
}

}  // namespace cronledger::cli
