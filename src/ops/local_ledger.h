// The Ledger of a configuration, its store and a clock: what a command does
// without --server, and what serve's operator API answers with (so the two
// answer alike by construction). Borrows all three; they outlive it.
#ifndef CRONLEDGER_OPS_LOCAL_LEDGER_H_
#define CRONLEDGER_OPS_LOCAL_LEDGER_H_

#include <string_view>

#include "config/config.h"
#include "cronledger/clock.h"
#include "ops/ledger.h"
#include "store/store.h"

namespace cronledger::ops {

// How a refusal names the way to give a job and everything: the command
// line's flags, or the API's fields.
struct Wording {
  std::string_view job = "--job";
  std::string_view all = "--all";
};

class LocalLedger : public Ledger {
 public:
  LocalLedger(const config::Config& config, store::Store& store, Clock& clock,
              Wording wording = Wording());

  Result<nlohmann::ordered_json> Jobs() override;
  Result<nlohmann::ordered_json> Runs(const store::RunQuery& query, bool with_steps) override;
  Result<nlohmann::ordered_json> Run(int64_t id) override;
  Result<nlohmann::ordered_json> Events(const store::EventQuery& query) override;
  cronledger::Status Gaps(
      const GapsQuery& query,
      const std::function<cronledger::Status(const nlohmann::ordered_json&)>& each) override;
  Result<nlohmann::ordered_json> Verify(const VerifyQuery& query) override;
  Result<nlohmann::ordered_json> SetPaused(const PauseAction& action) override;
  Result<nlohmann::ordered_json> ActOnRun(const RunAction& action) override;
  Result<ActionAnswer> Approve(const ApproveAction& action) override;
  Result<ActionAnswer> Impact(const ImpactOrder& order) override;
  Result<ActionAnswer> Trigger(const TriggerAction& action) override;

  // kInvalidArgument (NoSuchJob) unless `job` is configured or, when
  // `config_only` is false, recorded in the ledger (a job removed from the
  // configuration still has its history).
  cronledger::Status CheckJob(const std::string& job, bool config_only) const;

 private:
  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  Wording wording_;
};

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_LOCAL_LEDGER_H_
