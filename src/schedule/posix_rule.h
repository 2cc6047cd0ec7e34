#ifndef CRONLEDGER_SCHEDULE_POSIX_RULE_H_
#define CRONLEDGER_SCHEDULE_POSIX_RULE_H_

// A POSIX TZ rule ("EST5EDT,M3.2.0,M11.1.0"), as found at the end of TZif
// files, evaluated with date/ptz.h.
//
// This header and its .cc are compiled as C++17: ptz.h (date 3.0.1) does
// not compile in C++20, where std::chrono::hh_mm_ss makes a name in it
// ambiguous. Hence the plain integer interface.

#include <cstdint>
#include <memory>
#include <string>

namespace cronledger::schedule {

class PosixRule {
 public:
  // Seconds since the Unix epoch.
  struct Span {
    int64_t begin;
    int64_t end;
    int64_t offset;
  };

  // nullptr when `tz` is not a valid POSIX TZ string.
  static std::shared_ptr<const PosixRule> Parse(const std::string& tz);

  virtual ~PosixRule() = default;
  // The span of constant offset that contains `t`.
  virtual Span At(int64_t t) const = 0;
};

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_POSIX_RULE_H_
