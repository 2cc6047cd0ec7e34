// The cronledger command line as a table: one row per command (name,
// summary, the shared flags it takes, its own options, the function that
// runs it), in src/cli/command_table.cc, the one file of cronledger-core
// that includes CLI11. Adding a command is adding a row there
// (docs/development.md, "A CLI command").
#ifndef CRONLEDGER_CLI_COMMAND_TABLE_H_
#define CRONLEDGER_CLI_COMMAND_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

#include "cronledger/clock.h"

namespace cronledger::cli {

// Runs the command line `argv` (argv[0] is the program's name, as main()
// receives it) in this process: parses it against the table and runs the
// command chosen on `clock`. The command's output, `--help`, `help` and
// `--version` go to `out`; usage errors and the command's messages go to
// `err`. Returns the exit code (src/cli/exit_codes.h; kStepUsage for a
// usage error of `effect` or `checkpoint`). Reads $CRONLEDGER_CONFIG and
// $CRONLEDGER_SERVER where --config or --server is not given
// (docs/cli.md). Sends spdlog's default logger to stderr first: only
// `serve` logs, and its log lines go there, not to `err`.
int Run(const std::vector<std::string>& argv, Clock& clock, std::ostream& out,
        std::ostream& err);

// One command (or a command's subcommand, such as "effect run") as the
// table registers it: what docs/cli.md must document.
struct CommandDoc {
  std::string name;      // "runs"; a subcommand is "effect run"
  std::string summary;   // its line in `cronledger help`
  // Every option but --help: "--config", "-n"; positionals by their name
  // ("RUN_ID").
  std::vector<std::string> options;
};

// Every command of the table in table order, each followed by its
// subcommands.
std::vector<CommandDoc> DescribeCommands();

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_COMMAND_TABLE_H_
