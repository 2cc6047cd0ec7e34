// cronledger-core: every command but the ones a step calls, which the
// `cronledger` front answers itself and hands the rest to this program
// (src/cli/front_main.cc). The command line is src/cli/command_table.cc.
#include <iostream>
#include <string>
#include <vector>

#include "cli/command_table.h"
#include "cronledger/clock.h"

int main(int argc, char** argv) {
  return cronledger::cli::Run(std::vector<std::string>(argv, argv + argc),
                              cronledger::RealClock(), std::cout, std::cerr);
}
