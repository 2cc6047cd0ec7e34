// The commands a job's step calls — `effect run`, `checkpoint get|set` —
// declared once for both binaries that parse them: the full `cronledger`
// (for its help) and the small front that answers them without loading the
// rest (src/cli/front_main.cc, docs/cli.md).
#ifndef CRONLEDGER_CLI_STEP_COMMANDS_H_
#define CRONLEDGER_CLI_STEP_COMMANDS_H_

#include <CLI/CLI.hpp>

#include "cli/checkpoint_command.h"
#include "cli/effect_command.h"

namespace cronledger::cli {

struct StepCommands {
  EffectRunArgs effect_run;
  CheckpointArgs checkpoint;
  CLI::App* effect = nullptr;
  CLI::App* effect_run_cmd = nullptr;
  CLI::App* checkpoint_cmd = nullptr;
  CLI::App* checkpoint_get = nullptr;
  CLI::App* checkpoint_set = nullptr;
};

inline constexpr const char* kEffectSummary =
    "Inside a step: do an external effect at most once in effect";
inline constexpr const char* kCheckpointSummary =
    "Inside a step: read or move a watermark (fenced)";

// Adds `run` under `effect` (the `effect` command, which requires it);
// `commands` receives its arguments and must outlive the parse.
void AddEffectSubcommands(CLI::App& effect, StepCommands& commands);

// Adds `get` and `set` under `checkpoint`, as AddEffectSubcommands does.
void AddCheckpointSubcommands(CLI::App& checkpoint, StepCommands& commands);

// Adds `effect` and `checkpoint` with their subcommands to `app`.
void AddStepCommands(CLI::App& app, StepCommands& commands);

// Runs the step command that `app` parsed into `commands`; -1 when none
// was. Commands not added to this `commands` (null) count as not parsed.
int RunStepCommand(const StepCommands& commands, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_STEP_COMMANDS_H_
