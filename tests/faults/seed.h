// Seeded randomness for the fault scenarios (docs/faults.md, replaying a
// failure): one seed per test, from CRONLEDGER_FAULT_SEED when set, else a
// fresh one; every random timing a scenario uses is drawn from it. The seed
// and the exact command line that replays the test are printed when the
// test starts, attached to every failure message (a gtest scoped trace),
// and printed again when the test ends failed.
#ifndef CRONLEDGER_TESTS_FAULTS_SEED_H_
#define CRONLEDGER_TESTS_FAULTS_SEED_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace cronledger::faults {

class FaultSeed {
 public:
  // Construct once at the top of a test, before anything can fail.
  FaultSeed();
  FaultSeed(const FaultSeed&) = delete;
  FaultSeed& operator=(const FaultSeed&) = delete;

  uint64_t seed() const { return seed_; }
  // `CRONLEDGER_FAULT_SEED=N <this binary> --gtest_filter=Suite.Name`.
  const std::string& replay() const { return replay_; }

  // Uniform in [lo, hi] (both included).
  int Uniform(int lo, int hi);
  // True with probability `p`.
  bool Coin(double p = 0.5);
  std::mt19937_64& rng() { return rng_; }

 private:
  uint64_t seed_;
  std::string replay_;
  std::mt19937_64 rng_;
  ::testing::ScopedTrace trace_;
};

// The seed of the running test's FaultSeed, for the failure listener; 0
// when it has none.
uint64_t CurrentFaultSeed();

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_SEED_H_
