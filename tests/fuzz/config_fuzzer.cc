// Fuzzes the config loader: TOML text through ParseConfig, the entry point
// LoadConfig uses once it has read the file, with toml++ compiled in.
//
// Besides crashes, sanitizer reports and uncaught exceptions (ParseConfig
// must turn every problem into ConfigErrors), it checks what a config that
// passed validation promises the rest of cronledger: every job's schedule
// builds in its zone, names and partitions are valid and unique, the listen
// address is acceptable, and a refused file names at least one problem.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "cronledger/schedule.h"

namespace {

using cronledger::config::Config;
using cronledger::config::ConfigErrors;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "config_fuzzer: invariant broken: %s\n", what.c_str());
  std::abort();
}

void CheckAccepted(const Config& config) {
  const std::string& store = config.server.store;
  if (!store.starts_with("sqlite:/") && !store.starts_with("postgresql://") &&
      !store.starts_with("postgres://")) {
    Fail("store neither an absolute sqlite path nor a PostgreSQL URL: " + store);
  }
  if (!cronledger::config::ListenProblem(config.server.listen, !config.auth.tokens.empty())
           .empty()) {
    Fail("accepted listen address " + config.server.listen);
  }
  std::set<std::string> jobs;
  for (const auto& job : config.jobs) {
    if (!cronledger::config::IsValidName(job.name) || !jobs.insert(job.name).second) {
      Fail("job name " + job.name);
    }
    auto schedule =
        cronledger::Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
    if (!schedule.ok()) Fail("job " + job.name + ": " + schedule.status().message());
    job.EffectiveKey(*schedule);
    std::set<std::string> partitions;
    for (const auto& p : job.partitions) {
      if (!cronledger::config::IsValidPartitionId(p) || !partitions.insert(p).second) {
        Fail("partition " + p);
      }
    }
    if (job.steps.empty()) Fail("job without steps: " + job.name);
    std::set<std::string> steps;
    for (const auto& step : job.steps) {
      if (!cronledger::config::IsValidName(step.name) || !steps.insert(step.name).second) {
        Fail("step name " + step.name);
      }
    }
    if (job.EffectiveLeaseTtl().count() <= 0) Fail("lease ttl of job " + job.name);
  }
  // Secrets come from the environment in serve; here from a fixed table, so
  // that the checks on them run without touching the process environment.
  cronledger::config::ResolveTokenSecrets(config, [](const char* name) -> const char* {
    const std::string_view n(name);
    if (n.empty() || n.size() % 3 == 0) return nullptr;
    if (n.size() % 3 == 1) return "short";
    return "0123456789abcdef0123456789abcdef";
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A folder that does not exist: relative paths resolve against it, and
  // nothing may be read from or written to it.
  auto result = cronledger::config::ParseConfig(text, "/nonexistent/fuzz/cronledger.toml");
  if (const auto* errors = std::get_if<ConfigErrors>(&result)) {
    if (errors->problems.empty()) Fail("refused without a problem");
    if (errors->ToString().empty()) Fail("empty problem list text");
    return 0;
  }
  CheckAccepted(std::get<Config>(result));
  return 0;
}
