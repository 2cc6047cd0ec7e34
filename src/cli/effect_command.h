// `cronledger effect run`: runs CMD at most once in effect for an
// idempotency key (docs/effects.md).
#ifndef CRONLEDGER_CLI_EFFECT_COMMAND_H_
#define CRONLEDGER_CLI_EFFECT_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace cronledger::cli {

struct EffectRunArgs {
  std::string key;
  std::optional<std::string> fingerprint;
  std::optional<std::string> fingerprint_file;  // fingerprint: sha256 of its bytes
  std::optional<std::string> reconcile;         // PROGRAM, run with no arguments
  std::optional<std::string> checkpoint;
  std::string checkpoint_scope = "run";
  std::vector<std::string> command;  // CMD ARGS...
};

// The exit code: CMD's own status, 0 on a replay, or 64, 65, 69, 75, 76.
// CMD's stdout goes to `out` (and is stored); messages go to `err`.
int RunEffectRun(const EffectRunArgs& args, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_EFFECT_COMMAND_H_
