// `cronledger checkpoint get|set`: a step's watermarks, fenced by its lease
// (docs/effects.md, Checkpoints).
#ifndef CRONLEDGER_CLI_CHECKPOINT_COMMAND_H_
#define CRONLEDGER_CLI_CHECKPOINT_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

namespace cronledger::cli {

struct CheckpointArgs {
  std::string scope = "run";         // run | partition
  std::optional<std::string> value;  // set: the new watermark
};

// get: prints the watermark (and a newline), nothing when there is none.
// Exit 0, or 64, 75, 76 as `effect run`.
int RunCheckpointGet(const CheckpointArgs& args, std::ostream& out, std::ostream& err);
int RunCheckpointSet(const CheckpointArgs& args, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_CHECKPOINT_COMMAND_H_
