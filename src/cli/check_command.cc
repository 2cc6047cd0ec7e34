#include "cli/check_command.h"

#include <fmt/format.h>

#include <variant>

#include "cli/exit_codes.h"
#include "config/config.h"

namespace cronledger::cli {
namespace {

std::string Count(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "2 jobs, 3 partitions, 3 steps". Partitions counts the static lists and
// the implicit "default"; a job whose partitions come from a command is
// counted apart, since its set is known only when the command runs:
// "2 jobs, 2 partitions + partitions from 1 command, 3 steps".
std::string Summary(const config::Config& config) {
  std::size_t partitions = 0;
  std::size_t commands = 0;
  std::size_t steps = 0;
  for (const auto& job : config.jobs) {
    if (!job.partitions_command.empty()) {
      ++commands;
    } else {
      partitions += job.partitions.empty() ? 1 : job.partitions.size();
    }
    steps += job.steps.size();
  }
  std::string out = Count(config.jobs.size(), "job") + ", ";
  if (partitions > 0 || commands == 0) out += Count(partitions, "partition");
  if (partitions > 0 && commands > 0) out += " + ";
  if (commands > 0) out += "partitions from " + Count(commands, "command");
  return out + ", " + Count(steps, "step");
}

}  // namespace

int RunCheck(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  auto loaded = config::LoadConfig(args.config_path);
  if (const auto* errors = std::get_if<config::ConfigErrors>(&loaded)) {
    err << errors->ToString();
    return kExitUsage;
  }
  const auto& config = std::get<config::Config>(loaded);
  out << config.path << ": ok (" << Summary(config) << ")\n";
  return kExitOk;
}

}  // namespace cronledger::cli
