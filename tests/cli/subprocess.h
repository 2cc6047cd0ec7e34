// Runs a program as a real subprocess and captures what it printed.
#ifndef CRONLEDGER_TESTS_CLI_SUBPROCESS_H_
#define CRONLEDGER_TESTS_CLI_SUBPROCESS_H_

#include <string>
#include <vector>

namespace cronledger::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] with argv (no shell), waits for it and returns its output.
ProcessResult RunProcess(const std::vector<std::string>& argv);

// The same with exactly the environment `env` ("NAME=value" entries, nothing
// inherited) and, when `cwd` is not empty, that working directory.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& cwd = "");

// Runs the cronledger binary under test (CRONLEDGER_BIN) with `args`.
ProcessResult Cronledger(std::vector<std::string> args);

// The lines of `text`, without their newlines (an unterminated last line is
// dropped: every line cronledger prints ends with one).
std::vector<std::string> Lines(const std::string& text);

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_CLI_SUBPROCESS_H_
