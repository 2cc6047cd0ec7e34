#include "cli/checkpoint_command.h"

#include "api/attempt_requests.h"
#include "cli/step_client.h"

namespace cronledger::cli {
namespace {

bool ScopeOk(const CheckpointArgs& args, const char* command, std::ostream& err) {
  if (args.scope == "run" || args.scope == "partition") return true;
  err << "cronledger " << command << ": --scope must be run or partition, not \"" << args.scope
      << "\"\n";
  return false;
}

}  // namespace

int RunCheckpointGet(const CheckpointArgs& args, std::ostream& out, std::ostream& err) {
  constexpr const char* kCommand = "checkpoint get";
  if (!ScopeOk(args, kCommand, err)) return kStepUsage;
  const auto env = ReadStepEnvironment(kCommand, err);
  if (!env) return kStepUsage;
  const StepClient client(*env);
  std::string why;
  const auto reply = client.Call("GET", "/v1/checkpoints", nullptr, &why);
  if (!reply) return StepUnreachable(*env, kCommand, why, err);
  if (reply->status != 200) return StepExitFor(*reply, kCommand, err);
  const auto& c = reply->body[args.scope];
  if (c.is_object()) out << c.value("value", "") << "\n";
  return 0;
}

int RunCheckpointSet(const CheckpointArgs& args, std::ostream& out, std::ostream& err) {
  constexpr const char* kCommand = "checkpoint set";
  if (!ScopeOk(args, kCommand, err)) return kStepUsage;
  if (!args.value || args.value->size() > api::kMaxCheckpointBytes) {
    err << "cronledger " << kCommand << ": VALUE is required, at most "
        << api::kMaxCheckpointBytes << " bytes\n";
    return kStepUsage;
  }
  const auto env = ReadStepEnvironment(kCommand, err);
  if (!env) return kStepUsage;
  const StepClient client(*env);
  std::string why;
  const auto reply = client.Call("PUT", "/v1/checkpoints",
                                 {{"run_id", env->run_id},
                                  {"fencing_token", env->fencing_token},
                                  {"scope", args.scope},
                                  {"value", *args.value}},
                                 &why);
  if (!reply) return StepUnreachable(*env, kCommand, why, err);
  if (reply->status != 200) return StepExitFor(*reply, kCommand, err);
  (void)out;
  return 0;
}

}  // namespace cronledger::cli
