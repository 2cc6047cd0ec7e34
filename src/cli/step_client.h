// What `cronledger effect run` and `cronledger checkpoint` use to reach the
// server from inside a step: the step's environment (CRONLEDGER_API,
// CRONLEDGER_TOKEN, CRONLEDGER_RUN_ID, CRONLEDGER_FENCING_TOKEN) and HTTP
// calls that retry while the server cannot be reached. Their exit codes
// follow sysexits (docs/effects.md), so a step's exit-code classes apply.
#ifndef CRONLEDGER_CLI_STEP_CLIENT_H_
#define CRONLEDGER_CLI_STEP_CLIENT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>


namespace cronledger::cli {

// sysexits-style answers of the commands a step calls.
inline constexpr int kStepUsage = 64;        // EX_USAGE: bad arguments, or not inside a step
inline constexpr int kStepDataError = 65;    // EX_DATAERR: key used with another fingerprint
inline constexpr int kStepInDoubt = 69;      // EX_UNAVAILABLE: in doubt, not reconciled
inline constexpr int kStepTempFail = 75;     // EX_TEMPFAIL: server unreachable, try again
inline constexpr int kStepFenced = 76;       // EX_PROTOCOL: the lease moved on; stop

struct StepEnvironment {
  std::string api;    // CRONLEDGER_API
  std::string token;  // CRONLEDGER_TOKEN (a credential: never printed)
  int64_t run_id = 0;
  int64_t fencing_token = 0;
};

// The step's environment, or nullopt after telling `err` (as `command`)
// which variable is missing: the caller then exits kStepUsage.
std::optional<StepEnvironment> ReadStepEnvironment(const char* command, std::ostream& err);

struct StepReply {
  int status = 0;  // HTTP status
  nlohmann::json body;
};

class StepClient {
 public:
  explicit StepClient(StepEnvironment env);
  const StepEnvironment& env() const { return env_; }

  // One call: retried with backoff (about 10 s in all) while the server
  // cannot be reached or answers 5xx; every call it makes is safe to
  // repeat. nullopt when it never answered (kStepTempFail).
  std::optional<StepReply> Call(const std::string& method, const std::string& path,
                                const nlohmann::json& body, std::string* transport_error) const;

 private:
  StepEnvironment env_;
};

// The exit code for an error answer, after printing its message to `err`:
// 409 stale_lease 76, fingerprint_mismatch 65, conflict 75, 401/403/400/404
// 64, 5xx 75.
int StepExitFor(const StepReply& reply, const char* command, std::ostream& err);

// After a call that never got an answer: says so on `err`; kStepTempFail.
int StepUnreachable(const StepEnvironment& env, const char* command, const std::string& why,
                    std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_STEP_CLIENT_H_
