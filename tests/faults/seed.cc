#include "faults/seed.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <iostream>

namespace cronledger::faults {
namespace {

uint64_t ChooseSeed() {
  if (const char* s = std::getenv("CRONLEDGER_FAULT_SEED"); s != nullptr && *s != '\0') {
    return std::strtoull(s, nullptr, 10);
  }
  std::random_device dev;
  return (static_cast<uint64_t>(dev()) << 32) ^ dev();
}

std::string ReplayCommand(uint64_t seed) {
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string filter;
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    filter = std::string(" --gtest_filter=") + info->test_suite_name() + "." + info->name();
  }
  return "CRONLEDGER_FAULT_SEED=" + std::to_string(seed) + " " +
         (n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "cronledger_fault_tests") +
         filter;
}

uint64_t current_seed = 0;
std::string current_replay;

// Prints the replay line again under a failed test's last lines, where a
// reader of the CI log looks first.
class SeedOnFailure : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    current_seed = 0;
    current_replay.clear();
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result() != nullptr && info.result()->Failed() && !current_replay.empty()) {
      std::cout << "[ seed     ] " << info.test_suite_name() << "." << info.name()
                << " failed with seed " << current_seed << "; replay:\n  " << current_replay
                << "\n"
                << std::flush;
    }
  }
};

const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedOnFailure);
  return true;
}();

}  // namespace

FaultSeed::FaultSeed()
    : seed_(ChooseSeed()),
      replay_(ReplayCommand(seed_)),
      rng_(seed_),
      trace_(__FILE__, __LINE__, "seed " + std::to_string(seed_) + "; replay: " + replay_) {
  (void)registered;
  current_seed = seed_;
  current_replay = replay_;
  std::cout << "[ seed     ] " << seed_ << " (replay: " << replay_ << ")\n" << std::flush;
}

int FaultSeed::Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

bool FaultSeed::Coin(double p) { return std::bernoulli_distribution(p)(rng_); }

uint64_t CurrentFaultSeed() { return current_seed; }

}  // namespace cronledger::faults
