// The `cronledger` command users and job steps run. `effect run` and
// `checkpoint`, which a step may call once per effect, are answered here,
// in a small program that loads no database client, TLS library or
// logging library: the full program starts in about 6 ms, mostly loading
// and initialising Debian's libpq (Kerberos, LDAP, GnuTLS) and
// libcpp-httplib (OpenSSL), against effect run's budget of 5 ms
// (docs/benchmarks.md, effect run overhead). Every other command, and
// --help, is the full program, `cronledger-core` beside this one, which
// replaces this process (execv: same process id, arguments, environment,
// signals).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/program_path.h"
#include "cli/step_client.h"
#include "cli/step_commands.h"

namespace cronledger::cli {
namespace {

bool IsStepCommand(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string_view command = argv[1];
  return command == "effect" || command == "checkpoint";
}

// `cronledger-core` in the folder of the running executable.
std::string CorePath() {
  std::string core = ProgramBesideSelf("cronledger-core");
  return core.empty() ? "cronledger-core" : core;
}

int RunStep(int argc, char** argv) {
  CLI::App app{"cronledger: the commands a job's step calls", "cronledger"};
  StepCommands commands;
  AddStepCommands(app, commands);
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // Commands a step calls answer in sysexits, so its retry classes apply.
    return code == 0 ? 0 : kStepUsage;
  }
  return RunStepCommand(commands, std::cout, std::cerr);
}

}  // namespace
}  // namespace cronledger::cli

int main(int argc, char** argv) {
  using namespace cronledger::cli;
  if (IsStepCommand(argc, argv)) return RunStep(argc, argv);
  const std::string core = CorePath();
  execv(core.c_str(), argv);
  std::cerr << "cronledger: cannot start " << core << ": " << std::strerror(errno)
            << " (install it beside this program; see docs/deploy.md)\n";
  return 70;  // EX_SOFTWARE: the installation is broken
}
