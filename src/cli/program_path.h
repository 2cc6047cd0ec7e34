// Where the cronledger programs are: `cronledger` and `cronledger-core` are
// installed side by side, and each finds the other beside itself.
#ifndef CRONLEDGER_CLI_PROGRAM_PATH_H_
#define CRONLEDGER_CLI_PROGRAM_PATH_H_

#include <string>
#include <string_view>

namespace cronledger::cli {

// The absolute path of `name` in the folder of the running executable
// (/proc/self/exe); "" when that cannot be read.
std::string ProgramBesideSelf(std::string_view name);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_PROGRAM_PATH_H_
