// Small helpers shared by the engine tests.
#ifndef CRONLEDGER_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
#define CRONLEDGER_TESTS_ENGINE_ENGINE_TEST_UTIL_H_

#include <string>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"

namespace cronledger::engine::testing {

inline Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}

// A subprocess job with one step, "work", running /bin/true.
inline config::JobConfig Job(const std::string& name, const std::string& schedule,
                             const std::string& tz = "UTC") {
  config::JobConfig j;
  j.name = name;
  j.schedule = schedule;
  j.timezone = tz;
  config::StepConfig step;
  step.name = "work";
  step.command = {"/bin/true"};
  j.steps.push_back(step);
  return j;
}

}  // namespace cronledger::engine::testing

#endif  // CRONLEDGER_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
